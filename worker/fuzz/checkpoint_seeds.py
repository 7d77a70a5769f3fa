#!/usr/bin/env python3
"""checkpoint_seeds.py - writes the v2-* seeds of fuzz_checkpoint.c into
corpus/checkpoint, and two v1-* ones (the seeds there without a prefix are
mwj 0.1's version-1 backups, kept for the path that still reads them).

Each seed is byte 0, the mode fuzz_checkpoint.c reads (the run's optimizer,
whether the target appends the CRC, whether its model has RUN_STATE floats
of state), then the file, laid out as checkpoint.h's format version 2 and
with the header key for key as checkpoint_save writes it. Re-run after a
format change: python3 worker/fuzz/checkpoint_seeds.py
"""
import json
import os
import struct

RUN_PARAMS = 16
RUN_STATE = 4
RUN_HASH = "0123456789abcdef"
MODE_CRC, MODE_OVERSIZE, MODE_MODEL_STATE = 4, 8, 16
OPTIMIZERS = {0: ("sgd", 0), 1: ("sgd", 1), 2: ("adam", 2), 3: ("rmsprop", 3)}


def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def header(opt, nslots, nstate, **edit):
    """The header checkpoint_save writes for step 5 of epoch 2 at 1 x 64."""
    h = {
        "format": "mwj-backup",
        "version": 2,
        "model": "cnn",
        "arch_hash": RUN_HASH,
        "num_params": RUN_PARAMS,
        "model_state": nstate,
        "optimizer": opt,
        "state_slots": nslots,
        "iterations": "25",
        "learning_rate": 0.001,
        "momentum": 0.9 if opt != "adam" and nslots else 0,
        "seed": "42",
        "world": 1,
        "batch_size": 64,
        "epoch": 1,
        "step": 5,
        "global_step": "25",
        "examples": "1600",
    }
    h.update(edit)
    return json.dumps(h, separators=(",", ":")).encode()


def backup(mode, file_state=None, sums=None, crc=True, prefix_version=2, **edit):
    """A file for mode's run: file_state floats of model state (the run's
    by default), the six sums, the CRC or (crc False) a mode that has the
    target append it, the version prefix_version in the prefix, and edit's
    members in the header."""
    opt, nslots = OPTIMIZERS[mode & 3]
    nstate = (RUN_STATE if mode & MODE_MODEL_STATE else 0) if file_state is None else file_state
    text = header(opt, nslots, edit.pop("model_state", nstate), **edit)
    sums = sums or [224.0625, 320.0, 200.0, 3.5, 0.0, 0.0]
    if prefix_version == 1 and edit.get("version") == 1 and len(sums) == 3:
        # As mwj 0.1 wrote it: no "model_state" in the header.
        h = json.loads(text)
        del h["model_state"]
        text = json.dumps(h, separators=(",", ":")).encode()
    body = struct.pack("<8sII", b"MWJBACKP", prefix_version, len(text)) + text
    body += struct.pack("<%dd" % len(sums), *sums)
    body += struct.pack("<%df" % RUN_PARAMS, *[i * 0.25 - 1 for i in range(RUN_PARAMS)])
    body += struct.pack("<%df" % nstate, *[1.0 + i for i in range(nstate)])
    slots = nslots * RUN_PARAMS
    body += struct.pack("<%df" % slots, *[1e-3 * i for i in range(slots)])
    if crc:
        body += struct.pack("<I", crc32c(body))
    return bytes([mode | (0 if crc else MODE_CRC)]) + body


SEEDS = {
    # Sound files, each run: framed by the target, and whole.
    "v2-sgd": backup(0, crc=False),
    "v2-sgd-momentum-state": backup(1 | MODE_MODEL_STATE, crc=False),
    "v2-adam-state": backup(2 | MODE_MODEL_STATE, crc=False),
    "v2-adam-state-raw": backup(2 | MODE_MODEL_STATE),
    "v2-rmsprop-3-slots-state": backup(3 | MODE_MODEL_STATE, crc=False),
    "v2-other-name": backup(2, crc=False, model="sequential"),
    "v2-oversized": bytes([2 | MODE_MODEL_STATE | MODE_CRC | MODE_OVERSIZE])
    + backup(2 | MODE_MODEL_STATE, crc=False)[1:],
    # The model's state against the run and against the file's length.
    "v2-state-file-stateless-run": backup(2, file_state=RUN_STATE, crc=False),
    "v2-stateless-file-state-run": backup(2 | MODE_MODEL_STATE, file_state=0, crc=False),
    "v2-model-state-past-the-file": backup(2 | MODE_MODEL_STATE, crc=False, model_state=5),
    "v2-model-state-huge": backup(2 | MODE_MODEL_STATE, crc=False, model_state=1 << 40),
    # Versions that disagree: the prefix's and the header's, the body's.
    "v2-header-says-1": backup(2, crc=False, version=1),
    "v2-body-with-v1-prefix": backup(2, crc=False, prefix_version=1, version=1),
    "v2-version-3": backup(2, crc=False, prefix_version=3, version=3),
    # mwj 0.1's file (three sums: loss, correct, count) for a model with
    # state, which 0.1 never had, and for one without.
    "v1-adam-state-run": backup(
        2 | MODE_MODEL_STATE, file_state=0, crc=False, prefix_version=1, version=1,
        sums=[224.0625, 200.0, 320.0],
    ),
    "v1-adam": backup(2, crc=False, prefix_version=1, version=1, sums=[224.0625, 200.0, 320.0]),
    # Positions the run refuses: metric sums negative, non-zero at step 0.
    "v2-negative-metric": backup(2, crc=False, sums=[224.0625, 320.0, 200.0, -1.0, 0.0, 0.0]),
    "v2-metric-at-step-0": backup(
        2, crc=False, sums=[0.0, 0.0, 0.0, 0.0, 0.0, 1.0], step=0, epoch=1
    ),
    "v2-metric-above-count": backup(2, crc=False, sums=[224.0625, 320.0, 200.0, 9e9, 0.0, 0.0]),
}


def main():
    folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "checkpoint")
    for name, data in SEEDS.items():
        with open(os.path.join(folder, name), "wb") as f:
            f.write(data)
    print("wrote %d seeds into %s" % (len(SEEDS), folder))


if __name__ == "__main__":
    main()
