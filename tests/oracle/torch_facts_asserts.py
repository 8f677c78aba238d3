"""`assert` cases of test_torch_facts_breaks.py, in a module pytest does not rewrite: pytest turns the
`assert` statements of test modules into its own code, and Dynamo would see that instead."""
import torch  # noqa: F401 - the cases run under torch.compile


def assert_fstring(self, x):
    y = x * 2
    assert (y > -100).all(), f"bad shape {y.shape}"  # <- break GB0170
    return y + 1


def assert_attr_message(self, x):
    y = x * 2
    assert (y > -100).all(), self.MSG  # <- break GB0170
    return y + 1


def assert_multiline(self, x):
    msg = "m"
    assert (
        x.sum() > -1000  # <- break GB0170
    ), msg
    return x + 1


def assert_literal_message(self, x):
    y = x * 2
    assert (y > -100).all(), "literal message"
    return y + 1


def assert_no_message(self, x):
    y = x * 2
    assert (y > -100).all()
    return y + 1
