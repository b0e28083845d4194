"""The SQL read model: projections of koordstream's topics for `koord get` and `koord apply --wait`.

`topics` names the projected topics, `models` declares the tables, `db` opens the database and
checks its schema version, `incarnation` records which cluster incarnation it was projected from,
`projection` writes decoded records, `queries` reads Kubernetes-shaped objects back. The read
model holds nothing the topics do not: it can always be rebuilt by re-projecting them.
"""
