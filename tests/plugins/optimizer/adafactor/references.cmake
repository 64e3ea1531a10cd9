# optimizer/adafactor against transformers' Adafactor (pinned, installed by the test command):
# bitwise steps and step peaks on tensors of varied shapes, and a Qwen2 training run's peaks
# with the Adafactor transformers' Trainer builds (adafactor_reference_test.cc).
add_test(NAME AdafactorReference.StepsMatchTransformers
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/support/reference_test.sh
          $<TARGET_FILE:memsweep_tests> ${PROJECT_SOURCE_DIR}
          ${CMAKE_CURRENT_SOURCE_DIR}/plugins/optimizer/adafactor/reference/make_references.py
          MEMSWEEP_ADAFACTOR_REFERENCE_DIR "AdafactorReferenceTest.Steps*" --part steps)
set_tests_properties(AdafactorReference.StepsMatchTransformers PROPERTIES TIMEOUT 600 COST 60)
add_test(NAME AdafactorReference.TrainingMatchesTransformers
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/support/reference_test.sh
          $<TARGET_FILE:memsweep_tests> ${PROJECT_SOURCE_DIR}
          ${CMAKE_CURRENT_SOURCE_DIR}/plugins/optimizer/adafactor/reference/make_references.py
          MEMSWEEP_ADAFACTOR_REFERENCE_DIR "AdafactorReferenceTest.Training*" --part training)
set_tests_properties(AdafactorReference.TrainingMatchesTransformers PROPERTIES
  TIMEOUT 600 COST 300)
