"""Koordinator's MigrationController (``pkg/descheduler/controllers/migration``): PodMigrationJobs, their
arbitration and limits."""
