#!/usr/bin/env python3
"""check-deploy.py - the Kubernetes manifests in deploy/ hold together
(docs/cluster.md, "Deploying beyond this machine"). They have been run on
no cluster: this and yamllint are all that checks them.

  tools/check-deploy.py [DEPLOY_DIR] [--daemon PATH]

yamllint (the repository's .yamllint) must pass first; then, for every
document of every *.yaml:
- apiVersion, kind, metadata.name; namespace px-workers (but the Namespace);
- a DaemonSet's or Deployment's selector matches its pod template's labels;
- a Linux worker pod (nodeSelector kubernetes.io/os linux) runs privileged
  as root; a Windows one is HostProcess (windowsOptions.hostProcess true,
  hostNetwork true, runAsUserName set);
- every ConfigMap key a pod mounts (subPath or items) exists, and every
  configMap volume names a ConfigMap of the folder;
- a ScaledObject's scaleTargetRef names a Deployment of the folder (KEDA
  cannot scale a DaemonSet), every trigger is nats-jetstream with the
  fields KEDA documents as required (natsServerMonitoringEndpoint, account,
  stream, consumer, lagThreshold; all strings), stream PX_JOBS and a
  consumer px-<pool>-<high|normal|low> of the pool the target's config
  names (docs/cluster-protocol.md);
- every *.json key of a ConfigMap is a JSON object with cluster.mode
  "worker" and a pool.
With --daemon (a phoenix-executor whose defaults have a `cluster` block),
each Linux config (a key ending -linux.json) must pass its --check-config
(the files it names under cluster.credentials and cluster.tls_ca_file,
which a Secret provides at run time, replaced by stand-ins).
Exit status: 0 clean; 1 findings (each printed); 2 usage or no PyYAML.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

try:
    import yaml
except ImportError:  # PyYAML comes with yamllint (python3-yaml)
    print("check-deploy: PyYAML not installed (tools/setup.sh installs yamllint)")
    sys.exit(2)

ROOT = os.path.realpath(os.path.join(os.path.dirname(__file__), ".."))
KEDA_REQUIRED = ("natsServerMonitoringEndpoint", "account", "stream",
                 "consumer", "lagThreshold")
findings = []


def bad(where, what):
    findings.append(f"{where}: {what}")


def load(folder):
    docs = []
    for name in sorted(os.listdir(folder)):
        if not name.endswith((".yaml", ".yml")):
            continue
        with open(os.path.join(folder, name), encoding="utf-8") as f:
            for i, d in enumerate(yaml.safe_load_all(f)):
                if d is not None:
                    docs.append((f"{name}#{i}", d))
    return docs


def pod_spec(d):
    return (((d.get("spec") or {}).get("template") or {}).get("spec")) or {}


def check_meta(where, d):
    for k in ("apiVersion", "kind"):
        if not isinstance(d.get(k), str):
            bad(where, f"no {k}")
    meta = d.get("metadata") or {}
    if not meta.get("name"):
        bad(where, "no metadata.name")
    if d.get("kind") != "Namespace" and meta.get("namespace") != "px-workers":
        bad(where, "namespace is not px-workers")


def check_workload(where, d, configmaps):
    spec = d.get("spec") or {}
    sel = ((spec.get("selector") or {}).get("matchLabels")) or {}
    labels = (((spec.get("template") or {}).get("metadata") or {}).get("labels")) or {}
    if not sel or any(labels.get(k) != v for k, v in sel.items()):
        bad(where, f"selector {sel} does not match the pod labels {labels}")
    ps = pod_spec(d)
    os_ = (ps.get("nodeSelector") or {}).get("kubernetes.io/os")
    containers = ps.get("containers") or []
    if not containers:
        bad(where, "no containers")
    if os_ == "linux":
        for c in containers:
            sc = c.get("securityContext") or {}
            if sc.get("privileged") is not True or sc.get("runAsUser") != 0:
                bad(where, f"Linux worker container {c.get('name')} is not privileged as root")
    elif os_ == "windows":
        wo = ((ps.get("securityContext") or {}).get("windowsOptions")) or {}
        if wo.get("hostProcess") is not True or ps.get("hostNetwork") is not True:
            bad(where, "Windows worker is not a HostProcess pod with hostNetwork")
        if not wo.get("runAsUserName"):
            bad(where, "HostProcess pod without runAsUserName")
    else:
        bad(where, "nodeSelector kubernetes.io/os is neither linux nor windows")
    vols = {v.get("name"): v for v in ps.get("volumes") or []}
    for c in containers:
        for m in c.get("volumeMounts") or []:
            v = vols.get(m.get("name"))
            if v is None:
                bad(where, f"volumeMount {m.get('name')} names no volume")
                continue
            cm = (v.get("configMap") or {}).get("name")
            if cm and m.get("subPath") and m["subPath"] not in configmaps.get(cm, {}):
                bad(where, f"subPath {m['subPath']} is no key of ConfigMap {cm}")
    for v in vols.values():
        cm = v.get("configMap")
        if not cm:
            continue
        if cm.get("name") not in configmaps:
            bad(where, f"ConfigMap {cm.get('name')} is not in the folder")
            continue
        for it in cm.get("items") or []:
            if it.get("key") not in configmaps[cm["name"]]:
                bad(where, f"item {it.get('key')} is no key of ConfigMap {cm['name']}")


def pool_of(d, configmaps):
    """The pool of the config a workload mounts, or None."""
    ps = pod_spec(d)
    vols = {v.get("name"): v for v in ps.get("volumes") or []}
    for c in ps.get("containers") or []:
        for m in c.get("volumeMounts") or []:
            cm = ((vols.get(m.get("name")) or {}).get("configMap") or {}).get("name")
            key = m.get("subPath")
            if cm and key and key in configmaps.get(cm, {}):
                try:
                    return json.loads(configmaps[cm][key])["cluster"]["pool"]
                except (ValueError, KeyError, TypeError):
                    return None
    return None


def check_scaled(where, d, workloads, configmaps):
    spec = d.get("spec") or {}
    ref = spec.get("scaleTargetRef") or {}
    kind = ref.get("kind", "Deployment")
    target = workloads.get((kind, ref.get("name")))
    if kind not in ("Deployment", "StatefulSet"):
        bad(where, f"scaleTargetRef kind {kind}: KEDA scales Deployments and StatefulSets")
    elif target is None:
        bad(where, f"scaleTargetRef {kind}/{ref.get('name')} is not in the folder")
    pool = pool_of(target, configmaps) if target else None
    triggers = spec.get("triggers") or []
    if not triggers:
        bad(where, "no triggers")
    for i, t in enumerate(triggers):
        w = f"{where} triggers[{i}]"
        if t.get("type") != "nats-jetstream":
            bad(w, f"type {t.get('type')} is not nats-jetstream")
            continue
        md = t.get("metadata") or {}
        for k in KEDA_REQUIRED:
            if not isinstance(md.get(k), str) or not md.get(k):
                bad(w, f"metadata.{k} missing or not a string")
        for k, v in md.items():
            if not isinstance(v, str):
                bad(w, f"metadata.{k} is not a string (KEDA's metadata is strings)")
        if md.get("stream") != "PX_JOBS":
            bad(w, f"stream {md.get('stream')} is not PX_JOBS")
        m = re.fullmatch(r"px-(.+)-(high|normal|low)", str(md.get("consumer")))
        if not m:
            bad(w, f"consumer {md.get('consumer')} is not px-<pool>-<high|normal|low>")
        elif pool and m.group(1) != pool:
            bad(w, f"consumer {md.get('consumer')} is not of the target's pool {pool}")


def check_configs(configmaps, daemon):
    for cm, data in configmaps.items():
        for key, text in data.items():
            if not key.endswith(".json"):
                continue
            where = f"ConfigMap {cm} key {key}"
            try:
                cfg = json.loads(text)
            except ValueError as e:
                bad(where, f"not JSON: {e}")
                continue
            cl = cfg.get("cluster") if isinstance(cfg, dict) else None
            if not isinstance(cl, dict) or cl.get("mode") != "worker" or not cl.get("pool"):
                bad(where, "no cluster block with mode worker and a pool")
            if daemon and key.endswith("-linux.json"):
                check_with_daemon(where, text, daemon)


def check_with_daemon(where, text, daemon):
    # The daemon's file check wants a root-owned file, not group/other
    # writable, in a directory of the same kind: a private temp dir. The
    # files the config names under cluster.credentials and
    # cluster.tls_ca_file come from a Secret at run time: stand-ins (the
    # credentials 0600, as the daemon's secret check requires) take their
    # place here, so that what is checked is the config around them.
    with tempfile.TemporaryDirectory() as tmp:
        os.chmod(tmp, 0o755)
        cfg = json.loads(text)
        cl = cfg.get("cluster") if isinstance(cfg, dict) else None
        for key, mode in (("credentials", 0o600), ("tls_ca_file", 0o644)):
            if isinstance(cl, dict) and isinstance(cl.get(key), str):
                stand_in = os.path.join(tmp, key)
                with open(stand_in, "w", encoding="utf-8"):
                    pass
                os.chmod(stand_in, mode)
                cl[key] = stand_in
        text = json.dumps(cfg)
        path = os.path.join(tmp, "executor.json")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(path, 0o644)
        r = subprocess.run([daemon, "--check-config", "--config", path],
                           capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            bad(where, f"refused by {daemon} --check-config: "
                f"{(r.stdout + r.stderr).strip()}")


def main(argv):
    folder, daemon = os.path.join(ROOT, "deploy"), None
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--daemon" and args:
            daemon = args.pop(0)
        elif not a.startswith("-"):
            folder = a
        else:
            print(__doc__)
            return 2
    r = subprocess.run(["yamllint", "-s", "-c", os.path.join(ROOT, ".yamllint"), folder])
    if r.returncode != 0:
        print(f"check-deploy: yamllint findings in {folder} (above)")
        return 1
    docs = load(folder)
    configmaps = {d["metadata"]["name"]: d.get("data") or {}
                  for _, d in docs if d.get("kind") == "ConfigMap" and d.get("metadata")}
    workloads = {(d.get("kind"), (d.get("metadata") or {}).get("name")): d
                 for _, d in docs if d.get("kind") in ("DaemonSet", "Deployment", "StatefulSet")}
    for where, d in docs:
        check_meta(where, d)
        if d.get("kind") in ("DaemonSet", "Deployment", "StatefulSet"):
            check_workload(where, d, configmaps)
        elif d.get("kind") == "ScaledObject":
            check_scaled(where, d, workloads, configmaps)
    check_configs(configmaps, daemon)
    for f in findings:
        print(f"check-deploy: {f}")
    if findings:
        print(f"check-deploy: {len(findings)} finding(s) in {folder}")
        return 1
    print(f"check-deploy: {len(docs)} manifests in {folder} hold together"
          + (f"; Linux configs accepted by {daemon}" if daemon else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
