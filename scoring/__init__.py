"""Goldset Workbench's metric library: pure Python + NumPy/pyarrow/pandas/statsmodels/krippendorff.

Never imports Django, ``goldset`` or ``workbench``; see scoring/README.md for the API.
"""
