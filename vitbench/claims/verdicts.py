"""The verdicts of an audit, in report order (a module of its own so that the CLI can offer them
without loading the catalogue code):

    holds             the stated figure equals the recomputed one at the stated precision
    off               it does not, by the reported percentage, and no other reading explains it
    wrong convention  it matches a different reading of the same quantity: MACs labelled FLOPs,
                      MiB labelled MB, the attention matmuls without the projections, the patches
                      without the CLS token, ... (the record says which, and the right figure)
    inconclusive      the only network vitbench can count for it is a stand-in (an implementation
                      that may differ from the document's network, the catalogue says why), and
                      its figure differs: the document is not shown wrong
    needs a GPU       a figure about a GPU (throughput, GPU memory) and no CUDA measurement
    not checkable     vitbench has no model for it; the catalogue gives the reason
    error             recomputing failed (a bug or a missing module); the message says why
"""

from __future__ import annotations

from enum import Enum


class ClaimVerdict(str, Enum):
    """An audited claim's verdict (the list above). A member is its text: ``ClaimVerdict.OFF ==
    "off"``, in every format the audit writes."""

    HOLDS = "holds"
    OFF = "off"
    WRONG_CONVENTION = "wrong convention"
    INCONCLUSIVE = "inconclusive"
    NEEDS_GPU = "needs a GPU"
    NOT_CHECKABLE = "not checkable"
    ERROR = "error"

    # the text wherever it is shown (what enum.StrEnum does from Python 3.11)
    __str__ = str.__str__
    __format__ = str.__format__


#: the verdicts' texts, in report order (the CLI's ``--verdict`` choices)
VERDICTS = tuple(v.value for v in ClaimVerdict)
