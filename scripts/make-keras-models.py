#!/usr/bin/env python3
"""Writes the example models of examples/models/ that are not the tutorial's
own, as Keras 3.13's model.to_json() writes a Sequential (the shapes of
cnn.json and cnn-pool.json, which mirror keras/src/saving/serialization_lib.py
and each layer's get_config), with Python's standard library alone:

  cnn-deep.json    a deeper CNN for Fashion-MNIST: same padding,
                   BatchNormalization, Dropout, softmax output, Adam;
  regression.json  TensorFlow's multi-worker migration guide's model:
                   Dense(1) on two features, Adagrad(0.05), mean squared error.

usage: make-keras-models.py [OUT_DIR]   (default: examples/models)
"""
import json
import os
import sys

POLICY = {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"},
          "registered_name": None}


def obj(module, cls, config, build=None):
    o = {"module": module, "class_name": cls, "config": config, "registered_name": None}
    if build is not None:
        o["build_config"] = {"input_shape": [None] + list(build)}
    return o


def init(cls, **config):
    return obj("keras.initializers", cls, config if cls != "GlorotUniform" else {"seed": None})


def base(name):
    return {"name": name, "trainable": True, "dtype": POLICY}


class Builder:
    def __init__(self, shape):
        self.shape = list(shape)
        self.layers = [obj("keras.layers", "InputLayer", {
            "batch_shape": [None] + list(shape), "dtype": "float32", "sparse": False,
            "ragged": False, "name": "input_layer", "optional": False})]
        self.names = {}

    def name(self, stem):
        n = self.names.get(stem, 0)
        self.names[stem] = n + 1
        return stem if n == 0 else f"{stem}_{n}"

    def add(self, cls, stem, config, out_shape, built=True):
        c = base(self.name(stem))
        c.update(config)
        self.layers.append(obj("keras.layers", cls, c, self.shape if built else None))
        self.shape = list(out_shape)

    def reshape(self, target):
        self.add("Reshape", "reshape", {"target_shape": list(target)}, target, built=False)

    def conv(self, filters, k, padding="valid", activation="linear", use_bias=True):
        h, w, _ = self.shape
        out = [h, w, filters] if padding == "same" else [h - k + 1, w - k + 1, filters]
        self.add("Conv2D", "conv2d", {
            "filters": filters, "kernel_size": [k, k], "strides": [1, 1], "padding": padding,
            "data_format": "channels_last", "dilation_rate": [1, 1], "groups": 1,
            "activation": activation, "use_bias": use_bias,
            "kernel_initializer": init("GlorotUniform"), "bias_initializer": init("Zeros"),
            "kernel_regularizer": None, "bias_regularizer": None, "activity_regularizer": None,
            "kernel_constraint": None, "bias_constraint": None}, out)

    def batchnorm(self):
        self.add("BatchNormalization", "batch_normalization", {
            "axis": -1, "momentum": 0.99, "epsilon": 0.001, "center": True, "scale": True,
            "beta_initializer": init("Zeros"), "gamma_initializer": init("Ones"),
            "moving_mean_initializer": init("Zeros"), "moving_variance_initializer": init("Ones"),
            "beta_regularizer": None, "gamma_regularizer": None, "beta_constraint": None,
            "gamma_constraint": None, "synchronized": False}, self.shape)

    def activation(self, fn):
        self.add("Activation", "activation", {"activation": fn}, self.shape, built=False)

    def maxpool(self):
        h, w, c = self.shape
        self.add("MaxPooling2D", "max_pooling2d", {
            "pool_size": [2, 2], "padding": "valid", "strides": [2, 2],
            "data_format": "channels_last"}, [h // 2, w // 2, c], built=False)

    def dropout(self, rate):
        self.add("Dropout", "dropout", {"rate": rate, "seed": None, "noise_shape": None},
                 self.shape, built=False)

    def flatten(self):
        n = 1
        for d in self.shape:
            n *= d
        self.add("Flatten", "flatten", {"data_format": "channels_last"}, [n])

    def dense(self, units, activation="linear"):
        self.add("Dense", "dense", {
            "units": units, "activation": activation, "use_bias": True,
            "kernel_initializer": init("GlorotUniform"), "bias_initializer": init("Zeros"),
            "kernel_regularizer": None, "bias_regularizer": None, "kernel_constraint": None,
            "bias_constraint": None, "quantization_config": None},
            self.shape[:-1] + [units])

    def model(self, input_shape, compile_config):
        return {"module": "keras", "class_name": "Sequential",
                "config": {"name": "sequential", "trainable": True, "dtype": POLICY,
                           "layers": self.layers,
                           "build_input_shape": [None] + list(input_shape)},
                "registered_name": None,
                "build_config": {"input_shape": [None] + list(input_shape)},
                "compile_config": compile_config}


def optimizer(cls, extra, lr):
    config = {"name": cls, "learning_rate": lr, "weight_decay": None, "clipnorm": None,
              "global_clipnorm": None, "clipvalue": None, "use_ema": False,
              "ema_momentum": 0.99, "ema_overwrite_frequency": None,
              "loss_scale_factor": None, "gradient_accumulation_steps": None}
    config.update(extra)
    return obj("keras.optimizers", cls, config)


def compile_config(opt, loss, metrics):
    return {"optimizer": opt, "loss": loss, "loss_weights": None, "metrics": metrics,
            "weighted_metrics": None, "run_eagerly": False, "steps_per_execution": 1,
            "jit_compile": True}


def cnn_deep():
    b = Builder([28, 28])
    b.reshape([28, 28, 1])
    b.conv(32, 3, padding="same", use_bias=False)
    b.batchnorm()
    b.activation("relu")
    b.conv(32, 3, padding="same", activation="relu")
    b.maxpool()
    b.dropout(0.25)
    b.conv(64, 3, padding="same", use_bias=False)
    b.batchnorm()
    b.activation("relu")
    b.maxpool()
    b.dropout(0.25)
    b.flatten()
    b.dense(128, "relu")
    b.dropout(0.5)
    b.dense(10, "softmax")
    loss = obj("keras.losses", "SparseCategoricalCrossentropy", {
        "name": "sparse_categorical_crossentropy", "reduction": "sum_over_batch_size",
        "from_logits": False, "ignore_class": None})
    adam = optimizer("Adam", {"beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-07,
                              "amsgrad": False}, 0.0010000000474974513)
    return b.model([28, 28], compile_config(adam, loss, ["accuracy"]))


def regression():
    b = Builder([2])
    b.dense(1)
    adagrad = optimizer("Adagrad", {"initial_accumulator_value": 0.1, "epsilon": 1e-07},
                        0.05000000074505806)
    return b.model([2], compile_config(adagrad, "mse", None))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "examples/models"
    for name, model in (("cnn-deep", cnn_deep()), ("regression", regression())):
        path = os.path.join(out, name + ".json")
        with open(path, "w") as f:
            f.write(json.dumps(model))
        print(path)


if __name__ == "__main__":
    main()
