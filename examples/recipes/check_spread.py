"""GET URL a few times; exit 0 when at least N different engines answered (the recipes' check job)."""
import sys
import urllib.request

url, want = sys.argv[1], int(sys.argv[2])
seen = set()
for _ in range(4 * want):
    with urllib.request.urlopen(url, timeout=10) as r:
        seen.add(r.read().decode().strip())
print("\n".join(sorted(seen)))
sys.exit(0 if len(seen) >= want else 1)
