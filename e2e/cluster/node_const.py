"""What the parts of the local test cluster's node share: the store keys
of the kinds it reads and writes, and the node's own name and address.

Standard library only.
"""
PODS = "/v1/pods"
SERVICES = "/v1/services"
PVCS = "/v1/persistentvolumeclaims"
CONFIGMAPS = "/v1/configmaps"
SECRETS = "/v1/secrets"
SERVICEACCOUNTS = "/v1/serviceaccounts"
NODE_NAME = "mwj-local-node"
HOST_IP = "127.0.0.1"
