/* pod_objects.c - the objects a job's pods rely on: the headless Service
 * that gives them DNS names, the Secret holding the ring key and the
 * NetworkPolicy that keeps strangers off the ring port (pod_spec.h). The
 * TF_CONFIG ConfigMap is built beside the TF_CONFIG, in pod_spec.c. */
#include "pod_spec.h"

#include <stdio.h>

#include "base64.h"
#include "json_out.h"

/* A new object {apiVersion, kind, metadata} of j's object what, owned by
 * j, named as pod_spec_object_name says (generated: its generateName). */
static cJSON *object_new(const struct job *j, const char *api_version, enum job_object what)
{
	cJSON *o = json_out_new();
	char name[JOB_NAME_LEN];
	int generated = what == OBJ_SECRET || what == OBJ_CONFIG_MAP;
	cJSON *meta;

	pod_spec_object_name(j, what, name);
	json_out_str(o, "apiVersion", api_version);
	json_out_str(o, "kind", pod_spec_object_kind(what));
	meta = json_out_item(o, "metadata", pod_spec_metadata(j, generated ? NULL : name));
	if (generated)
		json_out_str(meta, "generateName", name);
	return o;
}

/* {"matchLabels": {job-name: <job>}}: the job's pods, and only them. */
static void job_pod_selector(cJSON *parent, const char *key, const struct job *j)
{
	cJSON *sel = json_out_obj(parent, key);

	json_out_str(json_out_obj(sel, "matchLabels"), LABEL_JOB_NAME, j->name);
}

cJSON *pod_spec_service(const struct job *j)
{
	cJSON *svc = object_new(j, "v1", OBJ_SERVICE);
	cJSON *spec = json_out_obj(svc, "spec");
	cJSON *port;

	json_out_str(spec, "clusterIP", "None");
	/* Workers resolve each other before any of them is Ready. */
	json_out_bool(spec, "publishNotReadyAddresses", 1);
	json_out_str(json_out_obj(spec, "selector"), LABEL_JOB_NAME, j->name);
	port = json_out_item(json_out_arr(spec, "ports"), NULL, json_out_new());
	json_out_str(port, "name", "ring");
	json_out_num(port, "port", j->port);
	json_out_num(port, "targetPort", j->port);
	json_out_str(port, "protocol", "TCP");
	return svc;
}

cJSON *pod_spec_secret(const struct job *j, const unsigned char *key, size_t key_len)
{
	char encoded[BASE64_ENCODED_LEN(RING_KEY_BYTES) + 1];
	cJSON *secret;

	/* The key is always RING_KEY_BYTES; anything longer is cut rather
	 * than overflowing, and would have been a caller's bug. */
	if (key_len > RING_KEY_BYTES)
		key_len = RING_KEY_BYTES;
	if (base64_encode(encoded, sizeof(encoded), key, key_len, NULL) < 0)
		encoded[0] = '\0';
	secret = object_new(j, "v1", OBJ_SECRET);
	json_out_str(secret, "type", "Opaque");
	json_out_str(json_out_obj(secret, "data"), "key", encoded);
	return secret;
}

/* A NetworkPolicy port range, appended to the array ports. */
static void port_range(cJSON *ports, const char *protocol, int first, int last)
{
	cJSON *p = json_out_item(ports, NULL, json_out_new());

	json_out_str(p, "protocol", protocol);
	json_out_num(p, "port", first);
	json_out_num(p, "endPort", last);
}

cJSON *pod_spec_network_policy(const struct job *j)
{
	cJSON *np, *spec, *ingress, *rule, *port;

	np = object_new(j, "networking.k8s.io/v1", OBJ_NETWORK_POLICY);
	spec = json_out_obj(np, "spec");
	job_pod_selector(spec, "podSelector", j);
	json_out_str(json_out_arr(spec, "policyTypes"), NULL, "Ingress");
	ingress = json_out_arr(spec, "ingress");
	rule = json_out_item(ingress, NULL, json_out_new());
	job_pod_selector(json_out_item(json_out_arr(rule, "from"), NULL, json_out_new()),
	                 "podSelector", j);
	port = json_out_item(json_out_arr(rule, "ports"), NULL, json_out_new());
	json_out_str(port, "protocol", "TCP");
	json_out_num(port, "port", j->port);
	/* Selecting the pods for Ingress denies whatever no rule admits, so a
	 * second rule admits every other port from anywhere: the policy
	 * guards the ring port and leaves the user's own ports (metrics, a
	 * TensorBoard) as they were. */
	rule = json_out_arr(json_out_item(ingress, NULL, json_out_new()), "ports");
	if (j->port > 1)
		port_range(rule, "TCP", 1, j->port - 1);
	if (j->port < 65535)
		port_range(rule, "TCP", j->port + 1, 65535);
	port_range(rule, "UDP", 1, 65535);
	port_range(rule, "SCTP", 1, 65535);
	return np;
}
