# optimizer/adamw_8bit and adamw_32bit against bitsandbytes' AdamW8bit and AdamW32bit on its CPU
# backend (pinned, installed by the test command like transformers): the dynamic maps, blockwise
# codes and six optimizer steps bit for bit. Included by tests/CMakeLists.txt.
add_test(NAME BnbAdamWReference.MatchesBitsandbytes
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/support/reference_test.sh
          $<TARGET_FILE:memsweep_tests> ${PROJECT_SOURCE_DIR}
          ${CMAKE_CURRENT_SOURCE_DIR}/plugins/optimizer/adamw_8bit/bnb_reference/make_references.py
          MEMSWEEP_BNB_ADAMW_REFERENCE_DIR "BnbAdamWReferenceTest.*")
set_tests_properties(BnbAdamWReference.MatchesBitsandbytes PROPERTIES TIMEOUT 600 COST 200)
