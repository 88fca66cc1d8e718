//! The Kubernetes manifests of `deploy/kubernetes`: every file parses, names a known
//! kind and apiVersion and is listed in kustomization.yaml; Redis demands a password
//! that comes from a Secret (checked by running the manifest's own start script on a
//! real redis-server); a NetworkPolicy lets only the coordinator reach Redis; the
//! coordinator takes its Redis URL from that Secret and its principals file from a
//! mounted Secret; the workers get their own tokens (calls, registration), never
//! the farm's.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::{Value, json};

fn kubernetes_dir() -> PathBuf {
    centroid_tests::repository_root().join("deploy/kubernetes")
}

/// Every YAML document of `file`, as JSON values.
fn documents(file: &Path) -> Vec<Value> {
    let text =
        std::fs::read_to_string(file).unwrap_or_else(|error| panic!("{}: {error}", file.display()));
    serde_yaml::Deserializer::from_str(&text)
        .map(|document| {
            Value::deserialize(document)
                .unwrap_or_else(|error| panic!("{}: not YAML: {error}", file.display()))
        })
        .filter(|document| !document.is_null())
        .collect()
}

/// The files of the directory with the given extension, by name.
fn files_ending(extension: &str) -> BTreeSet<String> {
    std::fs::read_dir(kubernetes_dir())
        .expect("deploy/kubernetes")
        .map(|entry| entry.expect("a directory entry").file_name())
        .map(|name| name.to_string_lossy().into_owned())
        .filter(|name| name.ends_with(extension))
        .collect()
}

fn kustomization() -> Value {
    documents(&kubernetes_dir().join("kustomization.yaml")).remove(0)
}

/// Every manifest listed in kustomization.yaml, with its file name.
fn manifests() -> Vec<(String, Value)> {
    let mut all = Vec::new();
    for name in files_ending(".yaml") {
        if name == "kustomization.yaml" {
            continue;
        }
        for document in documents(&kubernetes_dir().join(&name)) {
            all.push((name.clone(), document));
        }
    }
    all
}

/// The one manifest of `kind` called `name`.
fn manifest(kind: &str, name: &str) -> Value {
    let found: Vec<Value> = manifests()
        .into_iter()
        .map(|(_, document)| document)
        .filter(|document| document["kind"] == kind && document["metadata"]["name"] == name)
        .collect();
    assert_eq!(found.len(), 1, "one {kind} {name}");
    found.into_iter().next().unwrap()
}

/// The generator of Secret `name` in kustomization.yaml.
fn secret_generator(name: &str) -> Value {
    kustomization()["secretGenerator"]
        .as_array()
        .expect("a secretGenerator list")
        .iter()
        .find(|generator| generator["name"] == name)
        .unwrap_or_else(|| panic!("kustomization.yaml generates no Secret {name}"))
        .clone()
}

/// Whether the generator of Secret `secret` makes `key`.
fn generates_key(secret: &str, key: &str) -> bool {
    let generator = secret_generator(secret);
    let literals = generator["literals"].as_array().into_iter().flatten();
    let files = generator["files"].as_array().into_iter().flatten();
    literals
        .chain(files)
        .filter_map(Value::as_str)
        .any(|entry| entry == key || entry.starts_with(&format!("{key}=")))
}

fn container(workload: &Value, name: &str) -> Value {
    workload["spec"]["template"]["spec"]["containers"]
        .as_array()
        .expect("containers")
        .iter()
        .find(|container| container["name"] == name)
        .unwrap_or_else(|| panic!("no container {name}"))
        .clone()
}

fn env<'a>(container: &'a Value, name: &str) -> &'a Value {
    container["env"]
        .as_array()
        .expect("an env list")
        .iter()
        .find(|variable| variable["name"] == name)
        .unwrap_or_else(|| panic!("no env {name} in {}", container["name"]))
}

#[test]
fn every_manifest_parses_has_a_known_kind_and_is_listed_in_the_kustomization() {
    let known = [
        ("apps/v1", "Deployment"),
        ("apps/v1", "StatefulSet"),
        ("v1", "Service"),
        ("networking.k8s.io/v1", "NetworkPolicy"),
        ("keda.sh/v1alpha1", "ScaledObject"),
    ];
    let all = manifests();
    assert!(all.len() >= 8, "{} manifests", all.len());
    for (file, document) in &all {
        let kind = document["kind"].as_str().unwrap_or_default();
        let api = document["apiVersion"].as_str().unwrap_or_default();
        assert!(known.contains(&(api, kind)), "{file}: unknown {api} {kind}");
        let name = document["metadata"]["name"].as_str().unwrap_or_default();
        assert!(name.starts_with("centroid-"), "{file}: name {name:?}");
    }
    let kustomization = kustomization();
    assert_eq!(
        kustomization["apiVersion"],
        "kustomize.config.k8s.io/v1beta1"
    );
    let listed: BTreeSet<String> = kustomization["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .map(|resource| resource.as_str().unwrap().to_owned())
        .collect();
    let mut yaml = files_ending(".yaml");
    yaml.remove("kustomization.yaml");
    assert_eq!(listed, yaml, "kustomization.yaml lists every manifest");
    // every other file of the directory feeds a Secret
    let mut generated = BTreeSet::new();
    for generator in kustomization["secretGenerator"].as_array().unwrap() {
        for file in generator["files"].as_array().into_iter().flatten() {
            let file = file.as_str().unwrap();
            assert!(kubernetes_dir().join(file).is_file(), "{file} is missing");
            generated.insert(file.to_owned());
        }
    }
    assert_eq!(generated, files_ending(".toml"));
}

#[test]
fn redis_needs_the_password_of_a_secret_and_only_the_coordinator_reaches_it() {
    let redis = container(&manifest("StatefulSet", "centroid-redis"), "redis");
    for variable in ["REDIS_PASSWORD", "REDISCLI_AUTH"] {
        assert_eq!(
            env(&redis, variable)["valueFrom"]["secretKeyRef"],
            json!({"name": "centroid-redis", "key": "password"})
        );
    }
    assert!(generates_key("centroid-redis", "password"));
    let script = redis["args"][0].as_str().expect("the start script");
    assert!(script.contains("requirepass ${REDIS_PASSWORD}"), "{script}");
    assert!(
        !redis.to_string().contains("change-me"),
        "no password in the manifest"
    );

    let policy = manifest("NetworkPolicy", "centroid-redis");
    assert_eq!(
        policy["spec"]["podSelector"]["matchLabels"],
        json!({"app": "centroid-redis"})
    );
    assert_eq!(policy["spec"]["policyTypes"], json!(["Ingress"]));
    let rules = policy["spec"]["ingress"].as_array().expect("ingress rules");
    assert_eq!(rules.len(), 1, "{rules:?}");
    assert_eq!(
        rules[0]["from"],
        json!([{"podSelector": {"matchLabels": {"app": "centroid-coordinator"}}}])
    );
    assert_eq!(
        rules[0]["ports"],
        json!([{"protocol": "TCP", "port": 6379}])
    );
    let labels =
        &manifest("Deployment", "centroid-coordinator")["spec"]["template"]["metadata"]["labels"];
    assert_eq!(labels["app"], "centroid-coordinator");

    let workers = manifest("NetworkPolicy", "centroid-worker");
    assert_eq!(
        workers["spec"]["ingress"][0]["from"],
        json!([{"podSelector": {"matchLabels": {"app": "centroid-coordinator"}}}])
    );
}

#[test]
fn the_coordinator_takes_redis_and_principals_from_secrets() {
    let deployment = manifest("Deployment", "centroid-coordinator");
    let coordinator = container(&deployment, "coordinator");
    let arguments = coordinator["args"].to_string();
    assert!(!arguments.contains("--redis"), "{arguments}");
    assert_eq!(
        env(&coordinator, "REDIS_PASSWORD")["valueFrom"]["secretKeyRef"],
        json!({"name": "centroid-redis", "key": "password"})
    );
    // Kubernetes expands $(VAR) of a variable defined earlier in the list
    let names: Vec<&str> = coordinator["env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|variable| variable["name"].as_str().unwrap())
        .collect();
    let position = |name| names.iter().position(|each| *each == name).unwrap();
    assert!(position("REDIS_PASSWORD") < position("CENTROID_REDIS"));
    assert_eq!(
        env(&coordinator, "CENTROID_REDIS")["value"],
        "redis://:$(REDIS_PASSWORD)@centroid-redis:6379"
    );
    assert_eq!(
        env(&coordinator, "CENTROID_PRINCIPALS")["value"],
        "/etc/centroid/principals.toml"
    );
    let mount = coordinator["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|mount| mount["mountPath"] == "/etc/centroid/principals.toml")
        .expect("the principals file is mounted")
        .clone();
    assert_eq!(mount["subPath"], "principals.toml");
    let volume = deployment["spec"]["template"]["spec"]["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|volume| volume["name"] == mount["name"])
        .expect("the mounted volume")
        .clone();
    assert_eq!(volume["secret"]["secretName"], "centroid-principals");
    assert!(generates_key("centroid-principals", "principals.toml"));
    let principals = std::fs::read_to_string(kubernetes_dir().join("principals.toml")).unwrap();
    for role in ["worker", "admin"] {
        assert!(principals.contains(&format!("role = \"{role}\"")), "{role}");
    }
}

/// The redis container's own start script, run with a local redis-server on a free
/// port: without the password every command is refused, with it Redis answers, and
/// the password is not on the process's command line.
#[test]
fn the_redis_start_script_requires_the_password_and_hides_it() {
    let redis = container(&manifest("StatefulSet", "centroid-redis"), "redis");
    assert_eq!(redis["command"], json!(["sh", "-c"]));
    let script = redis["args"][0].as_str().unwrap();
    let port = centroid_tests::free_port();
    let data = tempfile::tempdir().unwrap();
    let local = script.replacen(
        "redis-server -",
        &format!(
            "redis-server - --port {port} --dir {}",
            data.path().display()
        ),
        1,
    );
    assert_ne!(local, script, "the script runs `redis-server -`");
    let password = "0123456789abcdef0123456789abcdef";
    let mut server = Command::new("sh")
        .args(["-c", &local])
        .env("REDIS_PASSWORD", password)
        .current_dir(data.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("sh runs");
    let ask = |auth: Option<&str>| {
        let mut cli = Command::new("redis-cli");
        cli.args(["-p", &port.to_string(), "ping"])
            .env_remove("REDISCLI_AUTH");
        if let Some(auth) = auth {
            cli.env("REDISCLI_AUTH", auth);
        }
        let output = cli.output().expect("redis-cli runs");
        String::from_utf8_lossy(&output.stdout).trim().to_owned()
    };
    let started = Instant::now();
    let mut answer = ask(Some(password));
    while answer != "PONG" && started.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(100));
        answer = ask(Some(password));
    }
    let refused = ask(None);
    let wrong = ask(Some("wrong"));
    let command_line = std::fs::read(format!("/proc/{}/cmdline", server.id())).unwrap_or_default();
    let killed = server.kill();
    let waited = server.wait();
    assert_eq!(answer, "PONG", "redis answers with the password");
    assert!(refused.contains("NOAUTH"), "{refused}");
    assert!(!wrong.contains("PONG"), "{wrong}");
    let command_line = String::from_utf8_lossy(&command_line);
    assert!(command_line.contains("redis-server"), "{command_line}");
    assert!(!command_line.contains(password), "{command_line}");
    killed.expect("redis-server killed");
    waited.expect("redis-server reaped");
}

/// The workers hold no admin token: they require the worker-call token (the
/// coordinator's calls carry it) and register with their own `worker`
/// principal's token, whose hash principals.toml lists; the farm's token is the
/// coordinator's alone.
#[test]
fn the_workers_get_their_own_tokens_and_never_the_farms() {
    let workers = manifest("Deployment", "centroid-worker");
    let worker = container(&workers, "worker");
    let secret_at = |workload: &Value, container: &Value, flag: &str| -> String {
        let argument = container["args"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .find_map(|argument| argument.strip_prefix(&format!("{flag}=")))
            .unwrap_or_else(|| panic!("no {flag} in {}", container["args"]))
            .to_string();
        let mount = container["volumeMounts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|mount| argument.starts_with(mount["mountPath"].as_str().unwrap()))
            .unwrap_or_else(|| panic!("{argument} is not under a mount"))
            .clone();
        workload["spec"]["template"]["spec"]["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|volume| volume["name"] == mount["name"])
            .map(|volume| volume["secret"]["secretName"].as_str().unwrap().to_string())
            .unwrap_or_else(|| panic!("no Secret volume {}", mount["name"]))
    };
    assert_eq!(
        secret_at(&workers, &worker, "--token-file"),
        "centroid-worker-calls"
    );
    assert_eq!(
        secret_at(&workers, &worker, "--registration-token-file"),
        "centroid-worker-token"
    );
    let volumes = workers["spec"]["template"]["spec"]["volumes"].to_string();
    assert!(!volumes.contains("\"centroid-token\""), "{volumes}");
    let coordinators = manifest("Deployment", "centroid-coordinator");
    let coordinator = container(&coordinators, "coordinator");
    assert_eq!(
        secret_at(&coordinators, &coordinator, "--worker-call-token-file"),
        "centroid-worker-calls"
    );
    assert_eq!(
        secret_at(&coordinators, &coordinator, "--token-file"),
        "centroid-token"
    );
    // the worker principal's hash is that of the workers' token
    let token = secret_generator("centroid-worker-token")["literals"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .find_map(|literal| literal.strip_prefix("token="))
        .expect("a token literal")
        .to_string();
    let principals = std::fs::read_to_string(kubernetes_dir().join("principals.toml")).unwrap();
    let worker_principal = principals
        .split("[[principal]]")
        .find(|entry| entry.contains("role = \"worker\""))
        .expect("a worker principal");
    assert!(
        worker_principal.contains(&centroid_runtime::principals::sha256_hex(token.as_bytes())),
        "the worker principal's token_sha256 is not the SHA-256 of centroid-worker-token's token:\n{worker_principal}"
    );
}
