#include "memsweep/allocation_label.h"

namespace memsweep::memory {
namespace {

thread_local const char* t_label = "";

}  // namespace

AllocationLabel::AllocationLabel(const char* what) : previous_(t_label) { t_label = what; }

AllocationLabel::~AllocationLabel() { t_label = previous_; }

const char* CurrentAllocationLabel() { return t_label; }

}  // namespace memsweep::memory
