"""The import toolkit shared by every importer and every ``import_*`` command: a streaming
reader (:mod:`.reader`), one error model (:mod:`.errors`), field checks (:mod:`.fields`),
batched two-pass validation and writing (:mod:`.batches`) and upload decoding (:mod:`.uploads`).
"""
