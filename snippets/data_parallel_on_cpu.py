"""``torch.nn.DataParallel.forward`` run on a CPU build, for a model that returns
its loss from ``forward``.

On a CPU build ``DataParallel`` keeps no devices, and its scatter and gather end in
``torch._C._scatter`` and ``torch._C._gather``, which only a CUDA build has.
``run_data_parallel`` runs ``DataParallel.forward``, ``scatter`` and ``gather`` as
PyTorch has them, with ``"meta"`` standing in for the GPUs and these stand-ins:

- ``torch._C._scatter`` records the chunk sizes the Python path passes and cuts as
  ``torch/csrc/cuda/comm.cpp`` does when it is given none,
  ``tensor.chunk(len(devices), dim)``: a citation a CPU build cannot run;
- ``torch._C._gather`` concatenates along ``dim``;
- ``replicate`` records how many replicas ``forward`` asks for and hands out the
  module itself (the real one copies it to each device), and ``parallel_apply`` runs
  the replicas one after another (the real one runs one thread per replica).
"""
import dataclasses
import warnings

import torch
from families import labelled
from hypothesis import strategies as st

# The draws of a check over DataParallel runs, and what every run keeps the same.
DATA_PARALLEL_RUNS = (labelled(st.integers(1, 12), "batches of 1 to 12 samples"),
                      labelled(st.integers(2, 5), "2 to 5 devices"))
DATA_PARALLEL_FIXED = ("a Linear model that returns its mean squared error; \"meta\" devices and stand-ins "
                       "for the C++ scatter and gather, which a CPU build lacks (snippets/data_parallel_on_cpu.py)")


class LossInForward(torch.nn.Module):
    """A linear model that returns the mean squared error of its batch."""

    def __init__(self, features: int):
        super().__init__()
        self.linear = torch.nn.Linear(features, 1)

    def forward(self, inputs, targets):
        return ((self.linear(inputs).squeeze(-1) - targets) ** 2).mean()


@dataclasses.dataclass
class Run:
    loss: torch.Tensor  # what DataParallel.forward returned (on "meta")
    chunk_sizes: list  # the chunk_sizes argument of each call to torch._C._scatter
    chunks: int  # how many chunks the batch was cut into
    replicas: int  # how many replicas forward asked replicate for
    replica_shapes: list  # the shape of what each replica returned
    warnings: list


def run_data_parallel(batch: int, devices: int, features: int = 3) -> Run:
    """``DataParallel(LossInForward(features))`` on ``devices`` stand-in GPUs, called
    on a batch of ``batch`` samples."""
    with torch.random.fork_rng():
        module = LossInForward(features).to("meta")
    model = torch.nn.DataParallel(module)
    model.device_ids, model.output_device, model.dim = list(range(devices)), 0, 0
    model.src_device_obj = torch.device("meta")
    chunk_sizes, chunks, replicas, replica_shapes = [], [], [], []

    def cuda_scatter(tensor, devices, sizes, dim, streams):
        chunk_sizes.append(sizes)
        cut = tensor.chunk(len(devices), dim)
        chunks.append(len(cut))
        return tuple(chunk.to("meta") for chunk in cut)

    def replicate(module, device_ids):
        replicas.append(len(device_ids))
        return [module] * len(device_ids)

    def parallel_apply(modules, inputs, kwargs):
        outputs = [module(*args, **kw) for module, args, kw in zip(modules, inputs, kwargs, strict=True)]
        replica_shapes.extend(tuple(output.shape) for output in outputs)
        return outputs

    model.replicate, model.parallel_apply = replicate, parallel_apply
    assert not hasattr(torch._C, "_scatter"), "a CUDA build: run DataParallel on its GPUs"
    torch._C._scatter, torch._C._gather = cuda_scatter, lambda tensors, dim, destination: torch.cat(tensors, dim)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            loss = model(torch.zeros(batch, features), torch.zeros(batch))
    finally:
        del torch._C._scatter, torch._C._gather
    assert len(set(chunks)) == 1, f"inputs and targets were cut differently: {chunks}"
    [asked] = replicas
    return Run(loss, chunk_sizes, chunks[0], asked, replica_shapes, [str(w.message) for w in caught])


if __name__ == "__main__":
    for batch, devices, losses in ((5, 4, 3), (1, 2, 1), (4, 2, 2), (6, 4, 3)):
        run = run_data_parallel(batch, devices)
        assert run.loss.shape == (losses,) == (run.replicas,) == (run.chunks,), (batch, devices, run)
        assert run.chunk_sizes == [None, None] and run.replica_shapes == [()] * losses, run
        assert any("all input tensors were scalars" in message for message in run.warnings), run.warnings
        print(f"a batch of {batch} on {devices} devices: {run.chunks} chunks, loss of shape {tuple(run.loss.shape)}")
    assert not hasattr(torch._C, "_scatter") and not hasattr(torch._C, "_gather")


def one_loss_per_chunk(batch: int, devices: int) -> bool:
    """r57b-2: ``DataParallel.forward`` as PyTorch has it returns as many losses as
    the scatter cut chunks, which can be fewer than the devices (5 samples on 4: 3)."""
    run = run_data_parallel(batch, devices)
    return tuple(run.loss.shape) == (run.chunks,)
