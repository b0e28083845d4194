"""The node agent's actuator: apply the Actuation records addressed to this node, acknowledge them.

Files (one concern each; one backend per mechanism):

=================  ==================================================================
``verify.py``      who may actuate: node, signature, sequence, known names (reasons)
``sequences.py``   last applied sequence per target, persisted in the state dir
``paths.py``       host paths from validated identifiers, confined to their roots
``limits.py``      safe ranges (Koordinator's floors) and v1/v2 conversions
``files.py``       read-before-write, skip-if-equal, restore-on-failure file writes
``backend.py``     the backend protocol: plan, execute, read back
``cgroup.py``      target directories, range checks and LS protection for both versions
``cgroupv1.py``    v1 files per subsystem
``cgroupv2.py``    unified files (cpu.max, cpu.weight, memory.max, ...)
``coresched.py``   core-scheduling cookies of a pod's tasks (prctl PR_SCHED_CORE)
``resctrl.py``     LLC CAT masks and MBA per QoS group or pod group, tasks of pods
``tc.py``          HTB classes L0/L1/L2 on one interface
``actuator.py``    ``Actuator.apply(record) -> ack`` and the Kafka loop
=================  ==================================================================
"""
