// Compiled only to produce the precompiled header that memsweep's in-tree plugins share.
