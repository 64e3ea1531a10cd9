# optimizer/torch_adamw against torch.optim.AdamW (the pinned torch, run by the reference python):
# bitwise steps and each step's peak on tensors of varied shapes and dtypes, per implementation
# and parameter grouping (torch_reference_test.cc); and a Qwen2 training run's peaks, whole and in
# the optimizer step, against transformers' loop with torch's AdamW, one group or the Trainer's
# two (hf_peak_test.cc).
add_test(NAME TorchAdamWReference.StepsEqualTorch
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/support/reference_test.sh
          $<TARGET_FILE:memsweep_tests> ${PROJECT_SOURCE_DIR}
          ${CMAKE_CURRENT_SOURCE_DIR}/plugins/optimizer/torch_adamw/torch_reference/make_references.py
          MEMSWEEP_TORCH_ADAMW_REFERENCE_DIR "TorchAdamWReferenceTest.*")
set_tests_properties(TorchAdamWReference.StepsEqualTorch PROPERTIES TIMEOUT 600 COST 30)
add_test(NAME TorchAdamWHfPeakReference.PeaksMatchTransformers
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/support/reference_test.sh
          $<TARGET_FILE:memsweep_tests> ${PROJECT_SOURCE_DIR}
          ${CMAKE_CURRENT_SOURCE_DIR}/plugins/optimizer/torch_adamw/hf_peak_reference/make_references.py
          MEMSWEEP_TORCH_ADAMW_HF_PEAK_DIR "TorchAdamWHfPeakReferenceTest.*")
set_tests_properties(TorchAdamWHfPeakReference.PeaksMatchTransformers PROPERTIES
  TIMEOUT 600 COST 200)
