// Compiled only to produce the precompiled header that memsweep's core, programs and in-tree plugins share.
