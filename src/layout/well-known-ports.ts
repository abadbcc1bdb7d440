import type { PortRange } from '../host/host-map.js';

/*
 * Ports that common ML and infrastructure programs bind by default, unasked. The built-in
 * band skips them: handed out while such a service is down, the one that starts later fails
 * with EADDRINUSE, or a client of the real service talks to ours. A user's own band is taken
 * as written (`berth doctor` notes them). Ports below 1024 are never handed out anyway.
 */
export interface WellKnownPort {
  port: number;
  programs: string;
}

export const WELL_KNOWN_PORTS: readonly WellKnownPort[] = [
  { port: 1883, programs: 'MQTT broker, Mosquitto' },
  { port: 2181, programs: 'ZooKeeper client' },
  { port: 2375, programs: 'Docker daemon, plain TCP' },
  { port: 2376, programs: 'Docker daemon, TLS' },
  { port: 2379, programs: 'etcd client' },
  { port: 2380, programs: 'etcd peer' },
  { port: 3000, programs: 'Grafana; Node.js dev servers' },
  { port: 3100, programs: 'Grafana Loki' },
  { port: 3306, programs: 'MySQL / MariaDB' },
  { port: 4317, programs: 'OpenTelemetry collector, OTLP gRPC' },
  { port: 4318, programs: 'OpenTelemetry collector, OTLP HTTP' },
  { port: 5000, programs: 'MLflow tracking server; Flask dev server' },
  { port: 5432, programs: 'PostgreSQL' },
  { port: 5601, programs: 'Kibana' },
  { port: 5672, programs: 'RabbitMQ AMQP' },
  { port: 6006, programs: 'TensorBoard' },
  { port: 6333, programs: 'Qdrant HTTP' },
  { port: 6334, programs: 'Qdrant gRPC' },
  { port: 6379, programs: 'Redis; Ray GCS, ray start --head' },
  { port: 6443, programs: 'Kubernetes API server' },
  { port: 7860, programs: 'Gradio' },
  { port: 8000, programs: 'vLLM OpenAI server; Ray Serve; uvicorn; Triton HTTP' },
  { port: 8001, programs: 'Triton Inference Server gRPC' },
  { port: 8002, programs: 'Triton Inference Server metrics' },
  { port: 8076, programs: 'Ray object manager, as Ray\'s docs set --object-manager-port' },
  { port: 8080, programs: 'HTTP alternate: Airflow, Jenkins, proxies; a common Ray --metrics-export-port' },
  { port: 8081, programs: 'HTTP alternate: Flink UI, Nexus, proxies' },
  { port: 8265, programs: 'Ray dashboard and job submission' },
  { port: 8443, programs: 'HTTPS alternate' },
  { port: 8501, programs: 'Streamlit' },
  { port: 8786, programs: 'Dask scheduler' },
  { port: 8787, programs: 'Dask dashboard' },
  { port: 8888, programs: 'Jupyter Notebook / JupyterLab' },
  { port: 9000, programs: 'MinIO; ClickHouse native protocol; PHP-FPM' },
  { port: 9090, programs: 'Prometheus' },
  { port: 9092, programs: 'Kafka broker' },
  { port: 9093, programs: 'Prometheus Alertmanager' },
  { port: 9100, programs: 'Prometheus node-exporter' },
  { port: 9200, programs: 'Elasticsearch / OpenSearch HTTP' },
  { port: 9300, programs: 'Elasticsearch / OpenSearch transport' },
  { port: 9400, programs: 'NVIDIA DCGM exporter' },
  { port: 10001, programs: 'Ray client server' },
  { port: 11211, programs: 'Memcached' },
  { port: 11434, programs: 'Ollama' },
  { port: 19530, programs: 'Milvus' },
  { port: 27017, programs: 'MongoDB' },
  { port: 29500, programs: 'torch.distributed MASTER_PORT, torchrun rendezvous' },
  { port: 30000, programs: 'SGLang server' },
  { port: 52365, programs: 'Ray dashboard agent HTTP' },
];

const BY_PORT: ReadonlyMap<number, WellKnownPort> = new Map(WELL_KNOWN_PORTS.map((w) => [w.port, w]));

export function wellKnownPort(port: number): WellKnownPort | undefined {
  return BY_PORT.get(port);
}

/** The listed ports inside `r`, lowest first. */
export function wellKnownIn(r: PortRange): WellKnownPort[] {
  return WELL_KNOWN_PORTS.filter((w) => w.port >= r.lo && w.port <= r.hi);
}

/** "8000 (vLLM …), 8265 (Ray dashboard …)" */
export function describeWellKnown(ports: readonly WellKnownPort[]): string {
  return ports.map((w) => `${w.port} (${w.programs})`).join(', ');
}

/**
 * Whether the allocator must pass over `port` of this source: only the built-in default
 * band (named "default" and read from no layout file) skips the listed ports.
 */
export function skippedByDefaultBand(source: { kind: string; band?: string; layoutFile?: string }, port: number): boolean {
  return source.kind === 'band' && source.band === 'default' && source.layoutFile === undefined && BY_PORT.has(port);
}
