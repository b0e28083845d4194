"""Avro contracts of every record on koordstream's topics.

- ``<Name>.avsc``: one record per file, namespace ``io.koordstream``; shared
  sub-records (ObjectMeta, Causation, ...) have their own files and are
  referenced by full name.
- ``history/<Name>.v<N>.avsc``: every version of a top-level schema ever
  written to a topic, self-contained. A change that alters a schema's
  fingerprint adds the next version; the evolution tests check that every
  version still resolves to the current schema.
- ``codec.py``: the only module that reads these files; single-object
  encoding and decoding.
"""
