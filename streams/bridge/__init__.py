"""The Kubernetes bridge: a cluster's objects onto the source topics, koordstream's decisions back onto the cluster.

Pure core: ``resources`` (what is watched), ``convert`` (API object -> the record ``koord apply`` makes),
``writes`` (decision + what the cluster shows -> the one write to make, or none), ``shadow`` (koordstream's
decisions against the cluster's). Shell: ``api`` (HTTP to the API server), ``checkpoint`` (where each watch
resumes), ``reflector`` (list+watch -> topics), ``actuator`` (topics -> writes), ``run`` (the process).
"""
