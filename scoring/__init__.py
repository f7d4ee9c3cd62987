"""Goldset Workbench's metric library: pure Python + NumPy/pandas/statsmodels/krippendorff.

Never imports Django, ``goldset`` or ``workbench``; see scoring/README.md for the API.
"""
