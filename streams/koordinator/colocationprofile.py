"""ClusterColocationProfile's names (``apis/config/v1alpha1``, ``apis/extension/cluster_colocation_profile.go``).

The profile itself and the pod mutation are in ``streams.colocationprofile``.
"""

from __future__ import annotations

API_GROUP = "config.koordinator.sh"
API_VERSION = f"{API_GROUP}/v1alpha1"
KIND = "ClusterColocationProfile"
PLURAL = "clustercolocationprofiles"
ANNOTATION_SKIP_UPDATE_RESOURCE = API_GROUP + "/skip-update-resources"
"""``extension.AnnotationSkipUpdateResource``: on a profile, keep the pod's cpu/memory untranslated."""
