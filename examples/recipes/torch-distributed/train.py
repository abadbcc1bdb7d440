"""One step of a data-parallel job: every rank adds (rank + 1) into one all_reduce over gloo.

torch.distributed's env:// init reads MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE, which the
stack fills from berth's placeholders; rank 0 listens on MASTER_PORT (its TCPStore), every other
rank connects there. The sum of 1..WORLD_SIZE proves every rank joined the same group.
Exits 0 when the sum is right, 1 when it is not.
"""
import os
import signal
import socket
import sys
import time

rank = int(os.environ['RANK'])
world_size = int(os.environ['WORLD_SIZE'])
# Which start of the job this is (berth's {generation}, BERTH_GENERATION): a job restarted as a
# group (restart: on-failure) would resume from its checkpoint here.
generation = os.environ.get('BERTH_GENERATION', '0')
assert os.environ.get('TORCHELASTIC_RESTART_COUNT', generation) == generation, 'TORCHELASTIC_RESTART_COUNT: "{generation}"'
print(f'rank {rank} generation {generation} master {os.environ["MASTER_ADDR"]}:{os.environ["MASTER_PORT"]} pid {os.getpid()}',
      file=sys.stderr, flush=True)


def this_generation():
    """FAIL_GENERATION names the generation the failure hooks act in (default: every one)."""
    return os.environ.get('FAIL_GENERATION', generation) == generation


# The recipes' restart tests: a rank that ignores SIGTERM (berth must KILL it after stop_grace).
if os.environ.get('IGNORE_TERM_RANK') == str(rank):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


def store_listens(addr, port):
    """Rank 0's TCPStore, not berth's hold of the port: a hold resets a connection, the store
    says nothing until asked."""
    try:
        c = socket.create_connection((addr, port), timeout=1)
    except OSError:
        return False
    with c:
        c.settimeout(1)
        try:
            return c.recv(1) != b''
        except socket.timeout:
            return True
        except OSError:
            return False


# The recipe's failure test: this rank dies before joining, as a rank would on a bad GPU or a
# missing file, once rank 0 listens on MASTER_PORT (it is then waiting in init_process_group for
# every rank, its SIGTERM hook in place); berth must end the job with its status and stop the
# ranks left waiting for it.
if os.environ.get('FAIL_RANK') == str(rank) and this_generation():
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not store_listens(os.environ['MASTER_ADDR'], int(os.environ['MASTER_PORT'])):
        time.sleep(0.1)
    print(f'rank {rank}: failing on purpose before init_process_group', file=sys.stderr, flush=True)
    sys.exit(3)

import torch  # noqa: E402  (after the failure hook: importing torch takes a second)
import torch.distributed as dist  # noqa: E402

dist.init_process_group('gloo', init_method='env://')
# STALL_RANK stops short of the all_reduce the others are in, and says where it is: a test
# kills it there (kill -9 in the middle of a collective).
if os.environ.get('STALL_RANK') == str(rank) and this_generation():
    with open(os.path.join(os.environ['BERTH_REPLICA_DIR'], 'stalled.pid'), 'w') as f:
        f.write(str(os.getpid()))
    time.sleep(600)
t = torch.tensor([float(rank + 1)])
dist.all_reduce(t, op=dist.ReduceOp.SUM)
want = world_size * (world_size + 1) // 2
got = int(t.item())
node = os.environ.get('BERTH_NODE', '?')
print(f'rank {rank}/{world_size} local_rank {os.environ.get("LOCAL_RANK")} node {node} '
      f'master {os.environ["MASTER_ADDR"]}:{os.environ["MASTER_PORT"]}: all_reduce sum {got} (want {want})', flush=True)
dist.destroy_process_group()
sys.exit(0 if got == want else 1)
