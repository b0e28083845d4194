"""Taints (on nodes) and tolerations (on pods), validated as the API server does, as Taint/Toleration records."""

from streams.objects import names
from streams.objects.fields import FieldReader, child, item

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
TOLERATION_OPERATORS = ("Equal", "Exists")


def read_taints(reader: FieldReader, value: object, path: str) -> list[dict]:
    """Taint records; key and effect are required, value must be a label value."""
    taints = []
    for index, raw in enumerate(reader.sequence(value, path)):
        taint_path = item(path, index)
        taint = reader.mapping(raw, taint_path)
        key = reader.string(taint.get("key"), child(taint_path, "key"), required=True)
        if key is not None and (reason := names.qualified_name_error(key)):
            reader.fail(child(taint_path, "key"), f'invalid key "{key}": {reason}')
        value_text = reader.string(taint.get("value"), child(taint_path, "value"))
        if value_text is not None and (reason := names.label_value_error(value_text)):
            reader.fail(child(taint_path, "value"), f'invalid value "{value_text}": {reason}')
        if taint.get("effect") in (None, ""):
            reader.fail(child(taint_path, "effect"), "required")
        effect = reader.enum(taint.get("effect"), child(taint_path, "effect"), TAINT_EFFECTS)
        taints.append({"key": key or "", "value": value_text, "effect": effect or ""})
    return taints


def read_tolerations(reader: FieldReader, value: object, path: str) -> list[dict]:
    """Toleration records, with the API server's rules on key, operator, value and tolerationSeconds."""
    tolerations = []
    for index, raw in enumerate(reader.sequence(value, path)):
        toleration_path = item(path, index)
        toleration = reader.mapping(raw, toleration_path)
        key = reader.string(toleration.get("key"), child(toleration_path, "key"))
        if key is not None and (reason := names.qualified_name_error(key)):
            reader.fail(child(toleration_path, "key"), f'invalid key "{key}": {reason}')
        operator = reader.enum(toleration.get("operator"), child(toleration_path, "operator"), TOLERATION_OPERATORS)
        operator = operator or "Equal"
        if key is None and operator != "Exists":
            reader.fail(child(toleration_path, "operator"), 'must be "Exists" when key is empty (matches all keys)')
        value_text = reader.string(toleration.get("value"), child(toleration_path, "value"))
        if operator == "Exists" and value_text is not None:
            reader.fail(child(toleration_path, "value"), 'must be empty when operator is "Exists"')
        elif value_text is not None and (reason := names.label_value_error(value_text)):
            reader.fail(child(toleration_path, "value"), f'invalid value "{value_text}": {reason}')
        effect = reader.enum(toleration.get("effect"), child(toleration_path, "effect"), TAINT_EFFECTS)
        seconds = reader.integer(toleration.get("tolerationSeconds"), child(toleration_path, "tolerationSeconds"))
        if seconds is not None and effect != "NoExecute":
            reader.fail(child(toleration_path, "effect"), 'must be "NoExecute" when tolerationSeconds is set')
        tolerations.append(
            {"key": key, "operator": operator, "value": value_text, "effect": effect, "tolerationSeconds": seconds}
        )
    return tolerations
