"""The ``slo-controller-config`` ConfigMap (Koordinator's ``pkg/util/sloconfig``): one parser, typed sections.

| module | what |
| --- | --- |
| ``configmap`` | ``SloConfig`` and ``parse_slo_config``: the whole ConfigMap, every section parsed once |
| ``document`` | the data keys, ``ConfigError``, Go-typed JSON decoding, the merge rule (``overlay``), ``Section`` |
| ``colocation`` | ``colocation-config``: ``ColocationStrategy`` per node (annotation and label overlays) |
| ``cpunormalization`` | ``cpu-normalization-config``: ratio models per node |
| ``nodeqos`` | thresholds, resource QoS, CPU burst, system, host applications: ``NodeQoSStrategy`` per node |
| ``selectors`` | Kubernetes label selectors as ``nodeConfigs`` use them |
"""
