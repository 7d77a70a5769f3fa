#!/usr/bin/python3
"""Writes the reference fixtures of worker/tests/test_reference.c: small
Keras 3 models trained for a few steps by an implementation that shares no
code with mwj, PyTorch, so that mwj's forward pass, losses, gradients,
moving statistics and optimizers are checked against numbers it did not
compute itself.

PyTorch is not installed in CI, so the outputs are committed; rerun this
after changing it (Debian's python3-torch and python3-numpy are enough):

    /usr/bin/python3 scripts/torch_reference.py

A rerun writes the same bytes: the data and weights come from fixed numpy
seeds, torch runs on one thread with deterministic algorithms, and zipfile
stamps every member with one fixed time. The committed files were made
with torch 1.13.0a0 and numpy 1.24.2 (each file's "meta" says so too).

How the reference is computed. Each case is a Keras 3 model.to_json()
Sequential with its compile_config (loss and optimizer), written here in
the shape Keras writes. The torch model is built by parsing that JSON, not
from the case's own description, and computes as Keras 3 does under
TensorFlow, the backend of MultiWorkerMirroredStrategy:
  - NHWC tensors; Conv2D's "same" padding split as TensorFlow splits it
    (the bottom and right get the odd row), padded by F.pad before a valid
    convolution; pools' padding excluded from the max and from the average's
    count; Dense on the last axis;
  - BatchNormalization as keras/src/layers/normalization: the batch mean
    and biased variance (tf.nn.moments), tf.nn.batch_normalization's
    x * inv + (beta - mean * inv) with inv = rsqrt(var + eps) * gamma, and
    moving = moving * momentum + stat * (1 - momentum);
  - Dropout with mwj's mask (worker/src/nn/dropout.h: TensorFlow's random
    bits cannot be reproduced, so the hash is reimplemented here on uint64),
    its key dropout_key(seed, i) for the layer's index i among the model's
    computing layers (Flatten and Reshape are none), or dropout_key(layer
    seed, 0) for a seeded layer; the scale is TensorFlow's, 1 / (1 - rate)
    in double from the Python rate;
  - the losses of keras/src/backend/tensorflow/nn.py: probabilities clipped
    to [1e-7, 1 - 1e-7] (categorical ones normalised to sum 1 first), and
    _get_logits: the output of a Keras softmax or sigmoid carries its input
    (_keras_logits), which every cross-entropy then reads as logits;
    softmax_cross_entropy_with_logits with TensorFlow's gradient (softmax -
    labels); the mean over the batch;
  - the optimizers as keras/src/optimizers/<name>.py's update_step, written
    with torch float32 ops (not torch.optim, whose Adam, RMSprop and Adagrad
    place epsilon differently), every hyper-parameter a float32 as Keras
    casts it, weight decay w - w * wd * lr before the rule (base_optimizer).
Gradients come from torch's autograd.

Each case's file, worker/tests/data/reference/<case>.npz (np.savez,
float32 unless said), holds:
  json          uint8, the model's JSON text
  meta          str, the command and the torch and numpy versions
  seed, pos     int64 (1,): the run seed (mwj's dropout keys) and the data
                stream position of the first example of step 0; step s
                starts at pos + s * B
  gelu_tanh     int64 (k,), optional: indices among the file's layers
                (InputLayer not counted) whose gelu takes the tanh form,
                which a Keras file cannot say (Keras serializes gelu by
                name, approximate=False), but mwj implements
  x             (B, ...) the batch, the same for every step
  y             (B, T) targets (class indices as floats for sparse labels)
  params        (P,) initial parameters in mwj's layout (model.h)
  state         (S,) initial moving statistics (mean then variance per
                BatchNormalization layer), S may be 0
  outputs       (B, K) the model's outputs in the training pass of step 0
  grads         (P,) the gradient of step 0's loss
  losses        (N,) the loss of each step's training pass
  state_steps   (N, S) the moving statistics after each step
  params_steps  (N, P) the parameters after each step
  opt_state     (slots, P) the optimizer's variables after the N steps, in
                the order of optimizer.h (absent when there are none)
"""

import contextlib
import json
import math
import os
import sys
import time
import zipfile

import numpy as np
import torch
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "worker", "tests", "data", "reference")
COMMAND = "/usr/bin/python3 scripts/torch_reference.py"

F32 = torch.float32
EPSILON = 1e-7  # keras.backend.epsilon()

# --- Keras 3 model JSON, as model.to_json() writes it ---

POLICY = {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"},
          "registered_name": None}


def obj(module, cls, config):
    return {"module": module, "class_name": cls, "config": config, "registered_name": None}


def init(cls):
    return obj("keras.initializers", cls, {"seed": None} if cls == "GlorotUniform" else {})


class Keras:
    """A Sequential's layers, each with its name and get_config."""

    def __init__(self, shape):
        self.shape = list(shape)
        self.layers = [obj("keras.layers", "InputLayer", {
            "batch_shape": [None] + self.shape, "dtype": "float32", "sparse": False,
            "ragged": False, "name": "input_layer", "optional": False})]
        self.names = {}

    def add(self, cls, stem, config):
        n = self.names.get(stem, 0)
        self.names[stem] = n + 1
        c = {"name": stem if n == 0 else f"{stem}_{n}", "trainable": True, "dtype": POLICY}
        c.update(config)
        self.layers.append(obj("keras.layers", cls, c))
        return self

    def conv(self, filters, kernel, strides=(1, 1), padding="valid", activation="linear",
             use_bias=True):
        return self.add("Conv2D", "conv2d", {
            "filters": filters, "kernel_size": list(kernel), "strides": list(strides),
            "padding": padding, "data_format": "channels_last", "dilation_rate": [1, 1],
            "groups": 1, "activation": activation, "use_bias": use_bias,
            "kernel_initializer": init("GlorotUniform"), "bias_initializer": init("Zeros"),
            "kernel_regularizer": None, "bias_regularizer": None, "activity_regularizer": None,
            "kernel_constraint": None, "bias_constraint": None})

    def pool(self, cls, size, strides, padding):
        stem = "max_pooling2d" if cls == "MaxPooling2D" else "average_pooling2d"
        return self.add(cls, stem, {"pool_size": list(size), "padding": padding,
                                    "strides": list(strides), "data_format": "channels_last"})

    def global_pool(self, keepdims=False):
        return self.add("GlobalAveragePooling2D", "global_average_pooling2d",
                        {"data_format": "channels_last", "keepdims": keepdims})

    def batchnorm(self, momentum=0.99, epsilon=0.001, center=True, scale=True):
        return self.add("BatchNormalization", "batch_normalization", {
            "axis": -1, "momentum": momentum, "epsilon": epsilon, "center": center,
            "scale": scale, "beta_initializer": init("Zeros"), "gamma_initializer": init("Ones"),
            "moving_mean_initializer": init("Zeros"),
            "moving_variance_initializer": init("Ones"), "beta_regularizer": None,
            "gamma_regularizer": None, "beta_constraint": None, "gamma_constraint": None,
            "synchronized": False})

    def activation(self, fn):
        return self.add("Activation", "activation", {"activation": fn})

    def dropout(self, rate, seed=None):
        return self.add("Dropout", "dropout", {"rate": rate, "seed": seed, "noise_shape": None})

    def flatten(self):
        return self.add("Flatten", "flatten", {"data_format": "channels_last"})

    def reshape(self, target):
        return self.add("Reshape", "reshape", {"target_shape": list(target)})

    def dense(self, units, activation="linear", use_bias=True):
        return self.add("Dense", "dense", {
            "units": units, "activation": activation, "use_bias": use_bias,
            "kernel_initializer": init("GlorotUniform"), "bias_initializer": init("Zeros"),
            "kernel_regularizer": None, "bias_regularizer": None, "kernel_constraint": None,
            "bias_constraint": None, "quantization_config": None})

    def model(self, loss, optimizer):
        return {"module": "keras", "class_name": "Sequential",
                "config": {"name": "sequential", "trainable": True, "dtype": POLICY,
                           "layers": self.layers, "build_input_shape": [None] + self.shape},
                "registered_name": None,
                "build_config": {"input_shape": [None] + self.shape},
                "compile_config": {"optimizer": optimizer, "loss": loss, "loss_weights": None,
                                   "metrics": None, "weighted_metrics": None,
                                   "run_eagerly": False, "steps_per_execution": 1,
                                   "jit_compile": True}}


LOSS_CLASSES = {
    "sparse_categorical_crossentropy": "SparseCategoricalCrossentropy",
    "categorical_crossentropy": "CategoricalCrossentropy",
    "binary_crossentropy": "BinaryCrossentropy",
}


def loss(name, from_logits=False):
    """A cross-entropy as the object Keras writes; mse and mae as the names
    compile(loss="...") keeps."""
    if name not in LOSS_CLASSES:
        return name
    config = {"name": name, "reduction": "sum_over_batch_size", "from_logits": from_logits}
    if name == "sparse_categorical_crossentropy":
        config["ignore_class"] = None
    else:
        config.update({"label_smoothing": 0.0, "axis": -1})
    return obj("keras.losses", LOSS_CLASSES[name], config)


def optimizer(cls, learning_rate, weight_decay=None, **extra):
    """Keras writes the learning rate from its float32 variable."""
    config = {"name": cls.lower(), "learning_rate": float(np.float32(learning_rate)),
              "weight_decay": weight_decay, "clipnorm": None, "global_clipnorm": None,
              "clipvalue": None, "use_ema": False, "ema_momentum": 0.99,
              "ema_overwrite_frequency": None, "loss_scale_factor": None,
              "gradient_accumulation_steps": None}
    defaults = {
        "SGD": {"momentum": 0.0, "nesterov": False},
        "Adam": {"beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-07, "amsgrad": False},
        "AdamW": {"beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-07, "amsgrad": False},
        "Adagrad": {"initial_accumulator_value": 0.1, "epsilon": 1e-07},
        "RMSprop": {"rho": 0.9, "momentum": 0.0, "epsilon": 1e-07, "centered": False},
    }[cls]
    config.update(defaults)
    config.update(extra)
    return obj("keras.optimizers", cls, config)


# --- mwj's dropout mask (dropout.h), on uint64 ---

MASK64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


def mix(z):
    """splitmix64's finaliser on a Python int."""
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def mix_array(z):
    """The same on a numpy uint64 array, whose products wrap."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def dropout_key(seed, layer):
    return mix((seed + (layer + 1) * GOLDEN) & MASK64)


def dropout_keep(key, pos, n, rate):
    """Which of the n values of the example at pos are kept: (n,) bool."""
    row = mix(key ^ mix(((pos + 1) * GOLDEN) & MASK64))
    with np.errstate(over="ignore"):
        elems = np.arange(1, n + 1, dtype=np.uint64)
        bits = mix_array(np.uint64(row) + elems * np.uint64(GOLDEN))
    u = (bits >> np.uint64(40)).astype(np.float32) * np.float32(2.0 ** -24)
    return u >= np.float32(rate)


# --- The torch model, from the JSON ---


def f32(v):
    """A Python number as Keras casts it to a float32 tensor."""
    return torch.tensor(v, dtype=F32)


def activate(x, name, approximate=False):
    """keras.activations.<name>; softmax and sigmoid keep their input on the
    output, as Keras 3 does (_keras_logits), for the cross-entropies."""
    if name == "linear":
        return x
    if name == "relu":
        return F.relu(x)
    if name == "tanh":
        return torch.tanh(x)
    if name == "gelu":
        return F.gelu(x, approximate="tanh" if approximate else "none")
    if name == "leaky_relu":
        return F.leaky_relu(x, 0.2)
    if name in ("sigmoid", "softmax"):
        out = torch.sigmoid(x) if name == "sigmoid" else torch.softmax(x, dim=-1)
        out._keras_logits = x
        return out
    raise ValueError(f"activation {name!r}")


def same_pads(size, kernel, stride):
    """TensorFlow's SAME padding of one axis: (before, after)."""
    out = -(-size // stride)
    total = max((out - 1) * stride + kernel - size, 0)
    return total // 2, total - total // 2


def nchw(x):
    return x.permute(0, 3, 1, 2)


def nhwc(x):
    return x.permute(0, 2, 3, 1)


class Net:
    """The Sequential in the JSON, over flat parameters and state in mwj's
    layout (model.h). forward() returns the outputs and the new moving
    statistics of a training pass."""

    def __init__(self, model, gelu_tanh=()):
        layers = model["config"]["layers"]
        assert layers[0]["class_name"] == "InputLayer"
        self.in_shape = tuple(layers[0]["config"]["batch_shape"][1:])
        self.shape = self.in_shape
        self.nparams = self.nstate = 0
        self.inits = []   # (offset, length, kind, fans) to draw, in order
        self.sinits = []  # (offset, length) of moving means, then variances
        self.ops = []
        self.nlayers = 0  # computing layers so far: mwj's layer index
        self.gelu_tanh = set(gelu_tanh)
        for k, layer in enumerate(layers[1:]):
            getattr(self, "_" + layer["class_name"])(k, layer["config"])
        self.out_shape = self.shape
        self.compile = model["compile_config"]

    def _take(self, n, kind, fans=None):
        off = self.nparams
        self.nparams += n
        self.inits.append((off, n, kind, fans))
        return off

    def _computing(self):
        i = self.nlayers
        self.nlayers += 1
        return i

    def _act(self, k, config):
        return config["activation"], k in self.gelu_tanh

    def _Conv2D(self, k, c):
        H, W, C = self.shape
        (KH, KW), (SH, SW), OC = c["kernel_size"], c["strides"], c["filters"]
        same = c["padding"] == "same"
        w = self._take(KH * KW * C * OC, "kernel", (KH * KW * C, KH * KW * OC))
        b = self._take(OC, "bias") if c["use_bias"] else None
        act, approx = self._act(k, c)
        if same:
            pt, pb = same_pads(H, KH, SH)
            pl, pr = same_pads(W, KW, SW)
            self.shape = (-(-H // SH), -(-W // SW), OC)
        else:
            pt = pb = pl = pr = 0
            self.shape = ((H - KH) // SH + 1, (W - KW) // SW + 1, OC)
        self._computing()

        def conv(x, p, run):
            kernel = p[w:w + KH * KW * C * OC].reshape(KH, KW, C, OC).permute(3, 2, 0, 1)
            bias = p[b:b + OC] if b is not None else None
            y = F.conv2d(F.pad(nchw(x), (pl, pr, pt, pb)), kernel, bias, stride=(SH, SW))
            return activate(nhwc(y), act, approx)
        self.ops.append(conv)

    def _pool(self, c, is_max):
        H, W, C = self.shape
        (PH, PW) = c["pool_size"]
        (SH, SW) = c["strides"] if c["strides"] is not None else c["pool_size"]
        if c["padding"] == "same":
            pt, pb = same_pads(H, PH, SH)
            pl, pr = same_pads(W, PW, SW)
            self.shape = (-(-H // SH), -(-W // SW), C)
        else:
            pt = pb = pl = pr = 0
            self.shape = ((H - PH) // SH + 1, (W - PW) // SW + 1, C)
        self._computing()
        pads = (pl, pr, pt, pb)

        def pool(x, p, run):
            x = nchw(x)
            if is_max:
                y = F.max_pool2d(F.pad(x, pads, value=-math.inf), (PH, PW), (SH, SW))
            else:
                # TensorFlow divides by the window's pixels inside the image.
                total = F.avg_pool2d(F.pad(x, pads), (PH, PW), (SH, SW), divisor_override=1)
                ones = torch.ones_like(x[:1, :1])
                count = F.avg_pool2d(F.pad(ones, pads), (PH, PW), (SH, SW),
                                     divisor_override=1)
                y = total / count
            return nhwc(y)
        self.ops.append(pool)

    def _MaxPooling2D(self, k, c):
        self._pool(c, True)

    def _AveragePooling2D(self, k, c):
        self._pool(c, False)

    def _GlobalAveragePooling2D(self, k, c):
        H, W, C = self.shape
        keep = c["keepdims"]
        self.shape = (1, 1, C) if keep else (C,)
        self._computing()
        self.ops.append(lambda x, p, run: x.mean(dim=(1, 2), keepdim=keep))

    def _Flatten(self, k, c):
        self.shape = (int(np.prod(self.shape)),)
        self.ops.append(lambda x, p, run: x.reshape(x.shape[0], -1))

    def _Reshape(self, k, c):
        target = list(c["target_shape"])
        if -1 in target:
            known = int(np.prod([d for d in target if d != -1]))
            target[target.index(-1)] = int(np.prod(self.shape)) // known
        self.shape = tuple(target)
        self.ops.append(lambda x, p, run: x.reshape(x.shape[0], *target))

    def _Dense(self, k, c):
        IN, OUT = self.shape[-1], c["units"]
        w = self._take(OUT * IN, "kernel", (IN, OUT))
        b = self._take(OUT, "bias") if c["use_bias"] else None
        act, approx = self._act(k, c)
        self.shape = self.shape[:-1] + (OUT,)
        self._computing()

        def dense(x, p, run):
            y = torch.matmul(x, p[w:w + OUT * IN].reshape(OUT, IN).t())
            if b is not None:
                y = y + p[b:b + OUT]
            return activate(y, act, approx)
        self.ops.append(dense)

    def _Dropout(self, k, c):
        rate = c["rate"]
        i = self._computing()
        n = int(np.prod(self.shape))
        own = c["seed"]
        # TensorFlow's stateless_dropout: x * (1 / (1 - rate)), the scale
        # from the Python float, then the mask.
        scale = float(np.float32(1.0 / (1.0 - rate)))

        def dropout(x, p, run):
            key = dropout_key(own, 0) if own is not None else dropout_key(run["seed"], i)
            keep = np.stack([dropout_keep(key, run["pos"] + b, n, rate)
                             for b in range(x.shape[0])])
            mask = torch.from_numpy(keep.astype(np.float32)).reshape(x.shape)
            return (x * f32(scale)) * mask
        self.ops.append(dropout)

    def _Activation(self, k, c):
        act, approx = self._act(k, c)
        self._computing()
        self.ops.append(lambda x, p, run: activate(x, act, approx))

    def _BatchNormalization(self, k, c):
        C = self.shape[-1]
        momentum, eps = c["momentum"], c["epsilon"]
        g = self._take(C, "gamma") if c["scale"] else None
        b = self._take(C, "beta") if c["center"] else None
        s = self.nstate
        self.nstate += 2 * C
        self.sinits.append((s, C))
        self._computing()

        def batchnorm(x, p, run):
            axes = tuple(range(x.dim() - 1))
            mean = x.mean(dim=axes)
            var = torch.square(x - mean.detach()).mean(dim=axes)
            inv = torch.rsqrt(var + f32(eps))
            if g is not None:
                inv = inv * p[g:g + C]
            beta = p[b:b + C] if b is not None else torch.zeros(C)
            y = x * inv + (beta - mean * inv)
            st = run["state"]
            new = run["new_state"]
            new[s:s + C] = st[s:s + C] * f32(momentum) + mean.detach() * f32(1.0 - momentum)
            new[s + C:s + 2 * C] = (st[s + C:s + 2 * C] * f32(momentum) +
                                    var.detach() * f32(1.0 - momentum))
            return y
        self.ops.append(batchnorm)

    def init(self, rng):
        """Parameters and state drawn from rng, in mwj's layout."""
        p = np.zeros(self.nparams, dtype=np.float32)
        for off, n, kind, fans in self.inits:
            if kind == "kernel":
                limit = math.sqrt(6.0 / (fans[0] + fans[1]))
                v = rng.uniform(-limit, limit, n)
            elif kind == "gamma":
                v = rng.uniform(0.8, 1.2, n)
            else:
                v = rng.uniform(-0.1, 0.1, n)
            p[off:off + n] = v
        st = np.zeros(self.nstate, dtype=np.float32)
        for off, C in self.sinits:
            st[off:off + C] = rng.uniform(-0.2, 0.2, C)
            st[off + C:off + 2 * C] = rng.uniform(0.5, 1.5, C)
        return p, st

    def forward(self, params, state, x, seed, pos):
        run = {"seed": seed, "pos": pos, "state": state, "new_state": state.clone()}
        for op in self.ops:
            x = op(x, params, run)
        return x, run["new_state"]


# --- The losses of keras/src/backend/tensorflow/nn.py ---


class SoftmaxXentWithLogits(torch.autograd.Function):
    """tf.nn.softmax_cross_entropy_with_logits: the loss -sum t log
    softmax(z), and the gradient TensorFlow's kernel gives, softmax(z) - t
    (the loss's own derivative only where t sums to 1)."""

    @staticmethod
    def forward(ctx, z, t):
        log_q = torch.log_softmax(z, dim=-1)
        ctx.save_for_backward(torch.exp(log_q) - t)
        return -(t * log_q).sum(dim=-1)

    @staticmethod
    def backward(ctx, grad):
        (backprop,) = ctx.saved_tensors
        return grad.unsqueeze(-1) * backprop, None


def clip(p):
    return torch.clamp(p, EPSILON, 1.0 - EPSILON)


def keras_loss(spec, y, out):
    """The loss compile() was given, as Keras 3 under TensorFlow computes it:
    the mean over the batch of per-example losses."""
    if isinstance(spec, str):
        name, from_logits = spec, False
    else:
        name, from_logits = spec["config"]["name"], spec["config"]["from_logits"]
    z = out
    if name in LOSS_CLASSES and hasattr(out, "_keras_logits"):
        z, from_logits = out._keras_logits, True  # _get_logits
    if name == "sparse_categorical_crossentropy":
        labels = y[:, 0].long()
        if not from_logits:
            z = torch.log(clip(z))
        per = -torch.log_softmax(z, dim=-1).gather(1, labels[:, None])[:, 0]
    elif name == "categorical_crossentropy":
        if from_logits:
            per = SoftmaxXentWithLogits.apply(z, y)
        else:
            q = clip(z / z.sum(dim=-1, keepdim=True))
            per = -(y * torch.log(q)).sum(dim=-1)
    elif name == "binary_crossentropy":
        if from_logits:
            # tf.nn.sigmoid_cross_entropy_with_logits, op for op
            cond = z >= 0
            relu = torch.where(cond, z, torch.zeros_like(z))
            neg_abs = torch.where(cond, -z, z)
            per = (relu - z * y + torch.log1p(torch.exp(neg_abs))).mean(dim=-1)
        else:
            p = clip(z)
            bce = y * torch.log(p) + (1 - y) * torch.log(1 - p)
            per = (-bce).mean(dim=-1)
    elif name in ("mse", "mean_squared_error"):
        per = torch.square(y - out).mean(dim=-1)
    elif name in ("mae", "mean_absolute_error"):
        per = torch.abs(y - out).mean(dim=-1)
    else:
        raise ValueError(f"loss {name!r}")
    return per.sum() / f32(per.shape[0])


# --- The optimizers of keras/src/optimizers ---


class Optimizer:
    """update_step of the optimizer's class, over one flat float32 tensor;
    slots in optimizer.h's order."""

    def __init__(self, spec, n):
        self.kind = spec["class_name"]
        self.c = spec["config"]
        self.iterations = 0
        c = self.c
        names = {"SGD": ["momentum"] if c.get("momentum", 0) != 0 else [],
                 "Adam": ["momentum", "velocity"], "AdamW": ["momentum", "velocity"],
                 "Adagrad": ["accumulator"],
                 "RMSprop": ["velocity"] + (["momentum"] if c.get("momentum", 0) > 0 else []) +
                 (["average_gradient"] if c.get("centered") else [])}[self.kind]
        self.slots = {name: torch.zeros(n) for name in names}
        if self.kind == "Adagrad":
            self.slots["accumulator"].fill_(c["initial_accumulator_value"])
        self.order = names

    def step(self, w, g):
        c, s = self.c, self.slots
        lr = f32(c["learning_rate"])
        if c["weight_decay"] is not None:
            w = w - w * f32(c["weight_decay"]) * lr
        if self.kind == "SGD":
            if "momentum" in s:
                m = s["momentum"] * f32(c["momentum"]) - g * lr
                s["momentum"] = m
                if c["nesterov"]:
                    w = w + (m * f32(c["momentum"]) - g * lr)
                else:
                    w = w + m
            else:
                w = w - g * lr
        elif self.kind in ("Adam", "AdamW"):
            local_step = f32(self.iterations + 1)
            beta_1_power = torch.pow(f32(c["beta_1"]), local_step)
            beta_2_power = torch.pow(f32(c["beta_2"]), local_step)
            alpha = lr * torch.sqrt(1 - beta_2_power) / (1 - beta_1_power)
            s["momentum"] = s["momentum"] + (g - s["momentum"]) * f32(1 - c["beta_1"])
            s["velocity"] = (s["velocity"] +
                             (torch.square(g) - s["velocity"]) * f32(1 - c["beta_2"]))
            w = w - (s["momentum"] * alpha) / (torch.sqrt(s["velocity"]) + f32(c["epsilon"]))
        elif self.kind == "Adagrad":
            s["accumulator"] = s["accumulator"] + torch.square(g)
            w = w - (lr * g) / torch.sqrt(s["accumulator"] + f32(c["epsilon"]))
        elif self.kind == "RMSprop":
            rho = c["rho"]
            s["velocity"] = f32(rho) * s["velocity"] + f32(1 - rho) * torch.square(g)
            if c["centered"]:
                a = f32(rho) * s["average_gradient"] + f32(1 - rho) * g
                s["average_gradient"] = a
                denominator = s["velocity"] - torch.square(a) + f32(c["epsilon"])
            else:
                denominator = s["velocity"] + f32(c["epsilon"])
            increment = (lr * g) / torch.sqrt(denominator)
            if "momentum" in s:
                s["momentum"] = f32(c["momentum"]) * s["momentum"] + increment
                w = w - s["momentum"]
            else:
                w = w - increment
        self.iterations += 1
        return w

    def state(self):
        return torch.stack([self.slots[k] for k in self.order]) if self.order else None


# --- The cases ---


def sparse_labels(rng, B, K):
    return rng.integers(0, K, B).astype(np.float32)[:, None]


def soft_labels(rng, B, K):
    """Targets that sum to 1 per example: one-hot for half the batch."""
    t = rng.uniform(0, 1, (B, K)).astype(np.float32)
    t[::2] = np.eye(K, dtype=np.float32)[rng.integers(0, K, (B + 1) // 2)]
    return (t / t.sum(axis=1, keepdims=True)).astype(np.float32)


def binary_targets(rng, B, K):
    t = rng.integers(0, 2, (B, K)).astype(np.float32)
    t[0] = np.float32(0.25)  # soft targets are allowed too
    return t


def regression_targets(rng, B, K):
    return rng.normal(0, 1, (B, K)).astype(np.float32)


def sgd(**kw):
    return optimizer("SGD", kw.pop("learning_rate", 0.05), **kw)


CASES = {}


def case(name, model, B, targets, steps=2, seed=7, pos=1000, gelu_tanh=(), saturate=0.0):
    """saturate: a factor for the last example's inputs, large enough that
    some of its probabilities pass the clip at 1e-7 or 1 - 1e-7."""
    CASES[name] = dict(model=model, B=B, targets=targets, steps=steps, seed=seed, pos=pos,
                       gelu_tanh=gelu_tanh, saturate=saturate)


# (a) every layer, activation and loss
case("cnn_every_layer",
     Keras([14, 14, 2])
     .conv(4, (3, 3), strides=(2, 2), padding="same", use_bias=False)
     .batchnorm(momentum=0.9)
     .activation("relu")
     .pool("MaxPooling2D", (2, 2), (1, 1), "same")
     .conv(5, (3, 3), activation="gelu")
     .pool("AveragePooling2D", (2, 2), (2, 2), "same")
     .flatten()
     .dense(8, "leaky_relu")
     .dropout(0.3)
     .dense(5, "softmax")
     .model(loss("sparse_categorical_crossentropy"), optimizer("Adam", 0.01)),
     B=6, targets=sparse_labels)

case("cnn_global_pool_sigmoid",
     Keras([9, 10, 3])
     .conv(4, (3, 2), strides=(1, 2), activation="tanh")
     .pool("MaxPooling2D", (3, 3), (2, 2), "valid")
     .dense(6, "gelu")
     .global_pool(keepdims=True)
     .dropout(0.5, seed=1234)
     .reshape([6])
     .dense(3, "sigmoid")
     .model(loss("binary_crossentropy"), optimizer("RMSprop", 0.01)),
     B=5, targets=binary_targets, gelu_tanh=(2,))

case("cnn_seed_shape",
     Keras([8, 8])
     .reshape([8, 8, 1])
     .conv(32, (3, 3), activation="relu")
     .pool("MaxPooling2D", (2, 2), (2, 2), "valid")
     .pool("AveragePooling2D", (2, 2), (1, 1), "valid")
     .flatten()
     .dense(10)
     .model(loss("sparse_categorical_crossentropy", from_logits=True), sgd()),
     B=4, targets=sparse_labels)

case("dense_batchnorm_mse",
     Keras([5])
     .dense(7, "relu")
     .dense(6, "tanh")
     .batchnorm(scale=False)
     .dense(3)
     .model(loss("mean_squared_error"), sgd(momentum=0.9)),
     B=8, targets=regression_targets)

case("dense_batchnorm_mae",
     Keras([6])
     .dense(5, "sigmoid")
     .batchnorm(momentum=0.8, epsilon=0.01, center=False)
     .dense(2, use_bias=False)
     .model(loss("mae"), optimizer("Adagrad", 0.1)),
     B=7, targets=regression_targets)

case("dense_rank2_categorical_logits",
     Keras([3, 4])
     .dense(6, "tanh")
     .flatten()
     .dense(4)
     .model(loss("categorical_crossentropy", from_logits=True), optimizer("Adam", 0.01)),
     B=6, targets=soft_labels)

case("softmax_activation_categorical",
     Keras([6])
     .dense(4)
     .activation("softmax")
     .model(loss("categorical_crossentropy"), sgd()),
     B=6, targets=soft_labels)

case("softmax_logits_flag_sparse",
     Keras([6])
     .dense(5, "softmax")
     .model(loss("sparse_categorical_crossentropy", from_logits=True), sgd()),
     B=6, targets=sparse_labels)

# After a Reshape the softmax's or sigmoid's logits are gone: probabilities,
# clipped, the last example's far enough out to reach the clip.
case("categorical_from_probabilities",
     Keras([6]).dense(5, "softmax").reshape([5])
     .model(loss("categorical_crossentropy"), sgd()),
     B=6, targets=soft_labels, saturate=40.0)

case("sparse_from_probabilities",
     Keras([6]).dense(5, "softmax").reshape([5])
     .model(loss("sparse_categorical_crossentropy"), sgd()),
     B=6, targets=sparse_labels, saturate=40.0)

case("binary_from_probabilities",
     Keras([6]).dense(3, "sigmoid").reshape([3])
     .model(loss("binary_crossentropy"), sgd()),
     B=6, targets=binary_targets, saturate=40.0)

# _get_logits takes the logits of any Keras softmax or sigmoid.
case("sigmoid_output_categorical",
     Keras([6]).dense(4, "sigmoid")
     .model(loss("categorical_crossentropy"), sgd()),
     B=6, targets=soft_labels)

case("sigmoid_output_sparse",
     Keras([6]).dense(4, "sigmoid")
     .model(loss("sparse_categorical_crossentropy"), sgd()),
     B=6, targets=sparse_labels)

case("softmax_output_binary",
     Keras([6]).dense(3, "softmax")
     .model(loss("binary_crossentropy"), sgd()),
     B=6, targets=binary_targets)


# (b) each optimizer and its options, three steps of one small model
def small(opt):
    return (Keras([5]).dense(6, "tanh").batchnorm(momentum=0.9).dense(3)
            .model(loss("mse"), opt))


for name, opt in [
        ("sgd", sgd(learning_rate=0.1)),
        ("sgd_momentum", sgd(learning_rate=0.1, momentum=0.9)),
        ("sgd_nesterov", sgd(learning_rate=0.1, momentum=0.9, nesterov=True)),
        ("sgd_weight_decay", sgd(learning_rate=0.1, weight_decay=0.05)),
        ("adam", optimizer("Adam", 0.01, beta_1=0.8, beta_2=0.99, epsilon=1e-3)),
        ("adamw", optimizer("AdamW", 0.01, weight_decay=0.1)),
        ("adagrad", optimizer("Adagrad", 0.1, initial_accumulator_value=0.05, epsilon=1e-3)),
        ("rmsprop", optimizer("RMSprop", 0.01)),
        ("rmsprop_momentum", optimizer("RMSprop", 0.01, momentum=0.9)),
        ("rmsprop_centered", optimizer("RMSprop", 0.01, momentum=0.5, centered=True,
                                       epsilon=1e-3, weight_decay=0.02))]:
    case("optimizer_" + name, small(opt), B=8, targets=regression_targets, steps=3)


# --- Running a case ---


def run(name, spec, verbose=True):
    model = spec["model"]
    rng = np.random.default_rng(abs(hash_name(name)))
    net = Net(model, spec["gelu_tanh"])
    params, state = net.init(rng)
    B = spec["B"]
    x = rng.uniform(-1, 1, (B,) + net.in_shape).astype(np.float32)
    if spec["saturate"]:
        x[-1] *= np.float32(spec["saturate"])
    K = int(np.prod(net.out_shape))
    lspec = model["compile_config"]["loss"]
    y = spec["targets"](rng, B, K)
    opt = Optimizer(model["compile_config"]["optimizer"], net.nparams)

    w = torch.from_numpy(params.copy())
    st = torch.from_numpy(state.copy())
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    rec = {"losses": [], "state_steps": [], "params_steps": []}
    for s in range(spec["steps"]):
        p = w.clone().requires_grad_(True)
        out, st_new = net.forward(p, st, xt, spec["seed"], spec["pos"] + s * B)
        loss_value = keras_loss(lspec, yt, out)
        loss_value.backward()
        if s == 0:
            rec["outputs"] = out.detach().reshape(B, K).numpy().copy()
            rec["grads"] = p.grad.numpy().copy()
            if spec["saturate"]:
                report_clip(name, out.detach().reshape(B, K))
        rec["losses"].append(float(loss_value))
        st = st_new.detach()
        with torch.no_grad():
            w = opt.step(w, p.grad.detach())
        rec["state_steps"].append(st.numpy().copy())
        rec["params_steps"].append(w.numpy().copy())

    arrays = {
        "json": np.frombuffer(json.dumps(model).encode(), dtype=np.uint8),
        "meta": np.array([f"made by: {COMMAND}", f"torch {torch.__version__}",
                          f"numpy {np.__version__}", f"case {name}"]),
        "seed": np.array([spec["seed"]], dtype=np.int64),
        "pos": np.array([spec["pos"]], dtype=np.int64),
        "x": x,
        "y": y,
        "params": params,
        "state": state,
        "outputs": rec["outputs"],
        "grads": rec["grads"],
        "losses": np.array(rec["losses"], dtype=np.float32),
        "state_steps": np.stack(rec["state_steps"]).astype(np.float32),
        "params_steps": np.stack(rec["params_steps"]).astype(np.float32),
    }
    if spec["gelu_tanh"]:
        arrays["gelu_tanh"] = np.array(spec["gelu_tanh"], dtype=np.int64)
    ostate = opt.state()
    if ostate is not None:
        arrays["opt_state"] = ostate.numpy().astype(np.float32)
    if verbose:
        print(f"{name}: {net.nparams} params, {net.nstate} state, batch {B}, "
              f"losses {', '.join(f'{v:.6f}' for v in rec['losses'])}")
    return arrays


def hash_name(name):
    """A seed from the case's name that does not depend on PYTHONHASHSEED."""
    h = 0
    for ch in name.encode():
        h = (h * 131 + ch) % (1 << 31)
    return h


def report_clip(name, out):
    clipped = int(((out < EPSILON) | (out > 1.0 - EPSILON)).sum())
    assert clipped > 0, f"{name}: no output reaches the clip"
    print(f"{name}: {clipped} outputs beyond the clip")


@contextlib.contextmanager
def fixed_clock():
    """zipfile stamps each member with the time: a fixed one, in UTC, so
    that a rerun writes the same bytes."""
    real, tz = time.time, os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    time.time = lambda: 1704067200.0  # 2024-01-01 00:00:00
    try:
        yield
    finally:
        time.time = real
        if tz is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = tz
        time.tzset()


def main():
    torch.set_default_dtype(F32)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    os.makedirs(OUT, exist_ok=True)
    names = sys.argv[1:] or list(CASES)
    for name in names:
        arrays = run(name, CASES[name])
        path = os.path.join(OUT, name + ".npz")
        with fixed_clock():
            np.savez(path, **arrays)
        with zipfile.ZipFile(path) as z:
            assert all(i.compress_type == zipfile.ZIP_STORED for i in z.infolist())


if __name__ == "__main__":
    main()
