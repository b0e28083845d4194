"""PodMigrationJob: the pod, mode, ttl, paused, reservation and delete options typed; the rest in the manifest."""

import json
from pathlib import Path

from streams.schemas import codec
from tests.streams.objects.support import problems_of, record_of

FIXTURE = Path(__file__).resolve().parents[3] / "fixtures" / "kinds" / "podmigrationjob.yaml"
JOB = ("apiVersion: scheduling.koordinator.sh/v1alpha1\nkind: PodMigrationJob\nmetadata: {{name: j}}\n"
       "spec: {spec}\nstatus: {status}\n")


def test_the_fixture_converts_to_its_typed_fields():
    record = record_of(FIXTURE.read_text())
    assert (record.topic, record.key, record.schema) == ("podmigrationjobs", "migrate-web-1", "PodMigrationJob")
    fields = {k: v for k, v in record.record.items() if k not in ("metadata", "manifest")}
    assert fields == {
        "podRef": {"namespace": "default", "name": "web-1", "uid": None},
        "mode": "ReservationFirst",
        "ttlMs": 300_000,
        "paused": False,
        "reservationName": None,
        "deleteOptions": {"gracePeriodSeconds": 30, "propagationPolicy": "Background", "dryRun": []},
        "phase": None,
    }
    assert "template" in json.loads(record.record["manifest"])["spec"]["reservationOptions"]
    assert codec.decode(codec.encode("PodMigrationJob", record.record)) == ("PodMigrationJob", record.record)


def test_an_empty_job_reads_as_the_controller_defaults():
    record = record_of(JOB.format(spec="{}", status="{}")).record
    assert (record["podRef"], record["mode"], record["ttlMs"], record["paused"], record["deleteOptions"]) == (
        None, None, None, False, None)


def test_reservation_and_phase():
    record = record_of(JOB.format(spec="{reservationOptions: {reservationRef: {name: r-1}}, paused: true}",
                                  status="{phase: Running}")).record
    assert (record["reservationName"], record["paused"], record["phase"]) == ("r-1", True, "Running")


def test_fields_are_validated():
    spec = "{mode: Teleport, ttl: soon, podRef: {name: p}, deleteOptions: {propagationPolicy: Never}}"
    assert problems_of(JOB.format(spec=spec, status="{phase: Lost}")) == [
        "spec.podRef.namespace: required",
        'spec.mode: unsupported value "Teleport" (supported: ReservationFirst, EvictDirectly)',
        'spec.ttl: invalid duration "soon"',
        'spec.deleteOptions.propagationPolicy: unsupported value "Never" (supported: Orphan, Background, Foreground)',
        'status.phase: unsupported value "Lost" (supported: Pending, Running, Succeeded, Failed, Aborted)',
    ]
