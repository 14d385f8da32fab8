"""The source documents vitbench was created from, by title: what presets, report sections and
audit rows cite. Their files are numbered (``000_....txt``); a user has the titles, not the
numbers, so every place that names a document names it through :func:`cite` or :func:`where`."""

from __future__ import annotations

#: file number -> (short name, title as the document gives it, what kind of document)
DOCUMENTS = {
    "000": ("notebook", "Vision Transformers: From Theory to Practice", "a Jupyter notebook: complexity analysis and CIFAR ablations"),
    "001": ("slides", "Vision Transformers", "lecture slides: ViT vs CNN on CIFAR-10"),
    "002": ("chapter", "Vision Transformers", "a textbook chapter: variants, memory and FLOP analysis, exercises"),
    "003": ("tutorial", "Tutorial 4.1: Vision Transformer (ViT)", "a tutorial by Erik Syniawa"),
    "004": ("assignment", "Assignment 3 (Exercise 1) Vision Transformers", "an assignment: a ViT on MNIST"),
}


def number_of(file: str) -> str:
    """'003_73df5eca95085079.txt' or '003' -> '003'."""
    return str(file).split("_", 1)[0].split(".", 1)[0]


def cite(file: str, section: str = "") -> str:
    """'the tutorial “Tutorial 4.1: Vision Transformer (ViT)”, training section'."""
    short, title, _ = DOCUMENTS[number_of(file)]
    return f"the {short} “{title}”" + (f", {section}" if section else "")


def where(file: str, section: str | None = None, quote: str | None = None) -> str:
    """'tutorial § 5.5 Overview': the document by its short name (:func:`legend` gives its title
    and file name) and the heading a reader searches for; without a section, the quoted phrase
    ('tutorial, “21M”'). Never a line number: a reader has the document, not our copy's lines."""
    number = number_of(file)
    short = DOCUMENTS[number][0] if number in DOCUMENTS else str(file)
    if section:
        return f"{short} § {section}"
    return f"{short}, “{' '.join(str(quote).split())}”" if quote else short


def legend() -> list[str]:
    """One line per document: its short name, title and kind (for a report's introduction)."""
    return [f"{short}: “{title}” ({kind})" for short, title, kind in DOCUMENTS.values()]


__all__ = ["DOCUMENTS", "cite", "legend", "number_of", "where"]
