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

VERDICTS = ("holds", "off", "wrong convention", "inconclusive", "needs a GPU", "not checkable", "error")
