// Precompiled header for the heavy LibTorch includes (each costs ~20 s to parse otherwise).
#pragma once
#include <ATen/ATen.h>
#include <torch/nn/module.h>
#include <torch/autograd.h>
