"""The model of the HTML report's tests (tests/test_report.py, tests/test_report_browser.py): two blocks in a
ModuleList and a head, so the report has nested module groups, call_module nodes of several types and the same
source line recorded for nodes of two modules.  ``fxla-dump tests/report_model.py:net --format html``."""
import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(16)
        self.fc = nn.Linear(16, 16)

    def forward(self, x):
        return x + torch.tanh(self.fc(self.ln(x)))   # </script><b>a comment, not markup</b>


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([Block() for _ in range(2)])
        self.head = nn.Linear(16, 4)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head(x).softmax(-1)


def net():
    torch.manual_seed(0)
    return Net().eval(), (torch.randn(2, 16),)
