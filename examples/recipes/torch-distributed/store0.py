"""A torch.distributed group whose store rank 0 creates on port 0 (the kernel chooses).

store0.py store WORLD_SIZE: rank 0. Creates the TCPStore on port 0, prints "TCPStore on port
N" (berth learns N from that line and the store's listener), joins the group as rank 0 and
runs one all_reduce with the others.
store0.py rank HOST PORT INDEX WORLD_SIZE: every other rank (rank INDEX + 1), given the learned port.
The sum of 1..WORLD_SIZE proves every rank joined the same group; exits 1 when it is wrong.
"""
import datetime
import sys

import torch
import torch.distributed as dist

role = sys.argv[1]
timeout = datetime.timedelta(seconds=120)
if role == "store":
    rank, world_size = 0, int(sys.argv[2])
    store = dist.TCPStore("127.0.0.1", 0, world_size, True, timeout=timeout, wait_for_workers=False)
    print(f"TCPStore on port {store.port}", flush=True)
else:
    host, port, rank, world_size = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]) + 1, int(sys.argv[5])
    store = dist.TCPStore(host, port, world_size, False, timeout=timeout)
dist.init_process_group("gloo", store=store, rank=rank, world_size=world_size, timeout=timeout)
t = torch.tensor([rank + 1.0])
dist.all_reduce(t)
want = world_size * (world_size + 1) / 2
print(f"rank {rank}: sum {t.item():.0f} (want {want:.0f})", flush=True)
dist.barrier()
dist.destroy_process_group()
sys.exit(0 if t.item() == want else 1)
