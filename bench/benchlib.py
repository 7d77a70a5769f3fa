"""What the comparison scripts share: where the built binaries are, the
glibc malloc setting that is PyTorch's best, and running a benchmark that
prints JSON lines."""
import json
import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
BIN_DIR = os.environ.get("MWJ_BIN_DIR", os.path.join(HERE, "..", "build", "bin"))
TUNED_MALLOC = ("glibc.malloc.mmap_threshold=33554432:"
                "glibc.malloc.trim_threshold=4294967296")


def run_json(cmd, env_extra, timeout=None):
    """Runs cmd with env_extra added to the environment and returns the JSON
    objects it printed, one per line starting with '{'. Raises if it fails."""
    env = dict(os.environ, **env_extra)
    out = subprocess.run(cmd, env=env, check=True, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True, timeout=timeout).stdout
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]
