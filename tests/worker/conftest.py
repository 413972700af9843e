import pytest
import torch


@pytest.fixture(autouse=True)
def _distributions_validate_as_the_user_has_it():
    """Raw torch runs in this process: dynamo's first compile turns torch.distributions' argument checks
    off for the rest of the process (TorchPatcher.patch), which would change what later tests' raw
    symbolic_trace does. Each test gets the setting back as it found it."""
    validate = torch.distributions.Distribution._validate_args
    yield
    torch.distributions.Distribution.set_default_validate_args(validate)
