#include "memsweep/loss.h"

#include <ATen/ATen.h>

namespace memsweep::model {

at::Tensor ApplyLinear(const LinearLayer& layer, const at::Tensor& x) {
  return layer.forward ? layer.forward(x, layer.weight, layer.bias)
                       : at::linear(x, layer.weight, layer.bias);
}

}  // namespace memsweep::model
