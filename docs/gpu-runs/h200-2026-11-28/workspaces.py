# How many cuBLAS workspaces a forward + backward GEMM takes from the caching allocator, and each one's size.
import torch, threading
torch.cuda.init()
d = torch.device("cuda")
cc = torch.cuda.get_device_capability()
a = torch.randn(256, 256, device=d, requires_grad=True)
b = torch.randn(256, 256, device=d)
torch.cuda.synchronize()
base = torch.cuda.memory_allocated()
y = a @ b                                  # forward GEMM: the caller's thread
torch.cuda.synchronize()
after_forward = torch.cuda.memory_allocated() - base - y.numel() * 4
y.sum().backward()                         # backward GEMM: autograd's device thread
torch.cuda.synchronize()
after_backward = torch.cuda.memory_allocated() - base - y.numel() * 4 - a.grad.numel() * 4
z = a @ b                                  # again: no new workspace
torch.cuda.synchronize()
again = torch.cuda.memory_allocated() - base - 2 * y.numel() * 4 - a.grad.numel() * 4
def other():
    w = a.detach() @ b
    torch.cuda.synchronize()
before_thread = torch.cuda.memory_allocated()
th = threading.Thread(target=other); th.start(); th.join()
third = torch.cuda.memory_allocated() - before_thread
print(f"compute capability {cc[0]}.{cc[1]}; torch {torch.__version__}")
print(f"after the first forward GEMM: {after_forward} bytes beyond the tensors")
print(f"after the first backward GEMM: {after_backward} bytes beyond the tensors")
print(f"after a second forward GEMM: {again} bytes beyond the tensors")
print(f"after a GEMM on a third thread (ended): +{third} bytes")
