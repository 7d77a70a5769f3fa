#!/usr/bin/env python3
"""Writes cnn.keras beside this script: examples/models/cnn.json as a .keras
file, the zip that Keras 3's model.save("cnn.keras") writes
(keras/src/saving/saving_lib.py: metadata.json, config.json and
model.weights.h5). config.json is deflated, as zipfile writes it when asked
to compress, so that test_keras_model.c reads it through inflate; the
weights are a placeholder, stored: mwj-worker reads only config.json. Fixed
dates keep the file the same from run to run. Standard library only.

    python3 worker/tests/data/keras/make-cnn-keras.py
"""
import json
import os
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", "..", ".."))
DATE = (2025, 1, 1, 0, 0, 0)


def member(zf, name, data, compress):
    info = zipfile.ZipInfo(name, date_time=DATE)
    info.compress_type = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    zf.writestr(info, data)


def main():
    with open(os.path.join(ROOT, "examples", "models", "cnn.json"), "rb") as f:
        config = f.read()
    metadata = json.dumps({"keras_version": "3.13.0", "date_saved": "2025-01-01@00:00:00"})
    with zipfile.ZipFile(os.path.join(HERE, "cnn.keras"), "w") as zf:
        member(zf, "metadata.json", metadata, True)
        member(zf, "config.json", config, True)
        member(zf, "model.weights.h5", b"\x89HDF\r\n\x1a\n (placeholder)", False)


if __name__ == "__main__":
    main()
