"""Result export and import: Parquet (primary), JSON, JSON Lines and CSV.

Private package: its public names are listed (and loaded on first use) by
:mod:`verifleet.results`. One row layout (``layout.py``) serves every writer:
:class:`~.parquet.ParquetResultWriter` builds rows from models and, for stored
JSON, the same columns through ``stored.py``.
"""
