"""ClusterColocationProfile: onboarding pods as co-located (BE on batch resources) without rewriting them.

- ``profile``: the typed profile and its validation (every bad field named);
- ``mutation``: the pod as Koordinator's mutating webhook admits it (match, apply, translate resources);
- ``store``: the profiles ``koord apply`` keeps in the home, applied to the pods it applies.
"""
