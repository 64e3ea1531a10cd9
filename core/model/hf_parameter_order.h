// The order in which Hugging Face's model.parameters() lists a causal LM's parameters — the
// order an optimizer built from it (torch.optim.AdamW(model.parameters())) walks them: the
// embedding, each decoder layer (attention's q, k, v, o projections, the MLP's gate, up, down —
// each weight followed by its bias and a PEFT adapter's lora_A and lora_B — then the two norms),
// the final norm, the LM head. LibTorch lists a module's own parameters before its children's
// (embedding and head first, a layer's biases after all its weights), which matters where an
// optimizer's temporaries depend on which tensor came before (torch's for-loop AdamW keeps the
// previous tensor's denominator while it builds the next one's).
//
//   std::vector<size_t> order = HuggingFaceParameterOrder(*model);  // indices into parameters()
#pragma once

#include <torch/nn/module.h>

#include <cstddef>
#include <vector>

namespace memsweep::model {

// A permutation of the module's parameters() indices: result[k] is the index of the k-th
// parameter in Hugging Face's order. Names memsweep does not know keep their relative order,
// after the known ones of their group.
std::vector<size_t> HuggingFaceParameterOrder(const torch::nn::Module& model);

}  // namespace memsweep::model
