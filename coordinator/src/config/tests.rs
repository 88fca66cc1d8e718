//! The coordinator settings' layering, defaults and checks.

use centroid_runtime::LogFormat;

use super::*;

#[test]
fn a_password_in_the_redis_url_never_reaches_a_log() {
    assert_eq!(
        redact_url_password("redis://:s3cr:et@centroid-redis:6379/0"),
        "redis://:***@centroid-redis:6379/0"
    );
    assert_eq!(
        redact_url_password("rediss://centroid:pw@redis.example:6380"),
        "rediss://centroid:***@redis.example:6380"
    );
    for unchanged in [
        "redis://127.0.0.1:6379",
        "redis://user@host:6379",
        "memory",
        "redis://host/0?x=a@b",
    ] {
        assert_eq!(redact_url_password(unchanged), unchanged);
    }
}

#[test]
fn tls_roots_for_a_plain_redis_url_are_refused_with_the_fix() {
    let command_line = CommandLine {
        redis: Some("redis://:pw@redis.example:6379".into()),
        redis_tls_ca: Some(PathBuf::from("/etc/centroid/redis-ca.pem")),
        ..CommandLine::default()
    };
    let error = CoordinatorConfig::load_with_environment(&command_line, HashMap::new())
        .expect_err("roots without rediss:// are a mistake")
        .to_string();
    assert!(error.contains("/etc/centroid/redis-ca.pem"), "{error}");
    assert!(error.contains("rediss://host:port"), "{error}");
    assert!(!error.contains(":pw@"), "the password stays out: {error}");
    let command_line = CommandLine {
        redis: Some("rediss://redis.example:6380".into()),
        ..command_line
    };
    let config = CoordinatorConfig::load_with_environment(&command_line, HashMap::new())
        .expect("rediss:// with its roots");
    assert_eq!(
        config.redis_tls_ca.as_deref(),
        Some(std::path::Path::new("/etc/centroid/redis-ca.pem"))
    );
}

#[test]
fn layers_override_in_order_file_environment_flags() {
    let directory = tempfile::tempdir().unwrap();
    let file = directory.path().join("centroid.toml");
    std::fs::write(
        &file,
        "[coordinator]\nkey_prefix = \"file\"\nmax_deliveries = 9\ncandidates_per_iteration = 7\n",
    )
    .unwrap();
    let command_line = CommandLine {
        common: CommonFlags {
            config: Some(file),
            log_json: true,
            ..CommonFlags::default()
        },
        candidates_per_iteration: Some(2),
        ..CommandLine::default()
    };
    let environment = HashMap::from([
        ("CENTROID_KEY_PREFIX".to_string(), "env".to_string()),
        (
            "CENTROID_CANDIDATES_PER_ITERATION".to_string(),
            "5".to_string(),
        ),
        ("CENTROID_RETRY_MAX_MS".to_string(), "123".to_string()),
    ]);
    let config = CoordinatorConfig::load_with_environment(&command_line, environment).unwrap();
    assert_eq!(config.candidates_per_iteration, 2, "flag beats environment");
    assert_eq!(config.key_prefix, "env", "environment beats file");
    assert_eq!(config.max_deliveries, 9, "file beats default");
    assert_eq!(
        config.retry_max_ms, 123,
        "a key without a flag is still an environment key"
    );
    assert_eq!(config.common.log_format, LogFormat::Json, "--log-json");
    assert_eq!(config.listen, "127.0.0.1:50051");
}

#[test]
fn the_defaults_pass_the_checks_and_layering_nothing_keeps_them() {
    let directory = tempfile::tempdir().unwrap();
    let empty = directory.path().join("empty.toml");
    std::fs::write(&empty, "").unwrap();
    let command_line = CommandLine {
        common: CommonFlags {
            config: Some(empty),
            ..CommonFlags::default()
        },
        ..CommandLine::default()
    };
    let config = CoordinatorConfig::load_with_environment(&command_line, HashMap::new()).unwrap();
    assert_eq!(config, CoordinatorConfig::default());
    CoordinatorConfig::default().check().unwrap();
}

#[test]
fn calls_to_workers_carry_the_worker_call_token_when_one_is_given() {
    let directory = tempfile::tempdir().unwrap();
    let file = directory.path().join("worker-calls");
    std::fs::write(&file, "calls-token\n").unwrap();
    let farm = HashMap::from([("CENTROID_TOKEN".to_string(), "farm-token".to_string())]);
    let without =
        CoordinatorConfig::load_with_environment(&CommandLine::default(), farm.clone()).unwrap();
    assert_eq!(
        without.worker_call_token(),
        Some(BearerToken::new("farm-token").unwrap())
    );
    let command_line = CommandLine {
        worker_call_token_file: Some(file),
        ..CommandLine::default()
    };
    let with = CoordinatorConfig::load_with_environment(&command_line, farm).unwrap();
    assert_eq!(
        with.worker_call_token(),
        Some(BearerToken::new("calls-token").unwrap())
    );
    let missing = CommandLine {
        worker_call_token_file: Some(directory.path().join("absent")),
        ..CommandLine::default()
    };
    let error = CoordinatorConfig::load_with_environment(&missing, HashMap::new()).unwrap_err();
    assert!(error.to_string().contains("absent"), "{error}");
}

#[test]
fn the_principals_file_is_read_at_load_from_the_flag_the_variable_or_the_file() {
    let directory = tempfile::tempdir().unwrap();
    let principals = directory.path().join("principals.toml");
    let hash = centroid_runtime::principals::sha256_hex(b"alice-token");
    std::fs::write(
        &principals,
        format!("[[principal]]\nname = \"alice\"\nrole = \"user\"\ntoken_sha256 = \"{hash}\"\n"),
    )
    .unwrap();
    let config_file = directory.path().join("centroid.toml");
    std::fs::write(
        &config_file,
        format!(
            "[coordinator]\nprincipals = {:?}\n",
            principals.display().to_string()
        ),
    )
    .unwrap();
    let from_file = CommandLine {
        common: CommonFlags {
            config: Some(config_file),
            ..CommonFlags::default()
        },
        ..CommandLine::default()
    };
    let config = CoordinatorConfig::load_with_environment(&from_file, HashMap::new()).unwrap();
    let access = config.access.expect("read at load");
    assert_eq!(&*access.identify(b"alice-token").unwrap().name, "alice");
    let broken = directory.path().join("broken.toml");
    std::fs::write(
        &broken,
        "[[principal]]\nname = \"bob\"\nrole = \"superuser\"\ntoken_sha256 = \"00\"\n",
    )
    .unwrap();
    let error = CoordinatorConfig::load_with_environment(
        &from_file,
        HashMap::from([(
            "CENTROID_PRINCIPALS".to_string(),
            broken.display().to_string(),
        )]),
    )
    .unwrap_err()
    .to_string();
    assert!(error.contains("broken.toml"), "{error}");
    assert!(
        error.contains("\"bob\"") && error.contains("unknown role"),
        "{error}"
    );
}

#[test]
fn lease_must_exceed_heartbeat_timeout() {
    let command_line = CommandLine {
        lease_timeout_ms: Some(1000),
        heartbeat_timeout_ms: Some(2000),
        ..CommandLine::default()
    };
    assert!(CoordinatorConfig::load_with_environment(&command_line, HashMap::new()).is_err());
}

#[test]
fn the_shared_flags_keep_their_names_and_land_in_the_shared_settings() {
    let directory = tempfile::tempdir().unwrap();
    let token_file = directory.path().join("token");
    std::fs::write(&token_file, "farm-token\n").unwrap();
    let command_line = CommandLine::try_parse_from([
        "centroid-coordinator",
        "--config",
        directory.path().join("absent.toml").to_str().unwrap(),
        "--log-json",
        "--token-file",
        token_file.to_str().unwrap(),
        "--ready-file",
        "/tmp/ready",
        "--metrics-listen",
        "127.0.0.1:0",
        "--listen",
        "127.0.0.1:1",
    ])
    .unwrap();
    assert!(
        CoordinatorConfig::load_with_environment(&command_line, HashMap::new()).is_err(),
        "--config names a file that must exist"
    );
    let empty = directory.path().join("empty.toml");
    std::fs::write(&empty, "").unwrap();
    let command_line = CommandLine {
        common: CommonFlags {
            config: Some(empty),
            ..command_line.common
        },
        ..command_line
    };
    let config = CoordinatorConfig::load_with_environment(
        &command_line,
        HashMap::from([("CENTROID_TLS_CLIENT_AUTH".to_string(), "true".to_string())]),
    );
    assert!(
        matches!(
            config,
            Err(CoordinatorError::Config(ConfigError::Tls(
                centroid_runtime::TlsError::ClientAuthWithoutCa
            )))
        ),
        "{config:?}"
    );
    let config = CoordinatorConfig::load_with_environment(&command_line, HashMap::new()).unwrap();
    assert_eq!(config.listen, "127.0.0.1:1");
    assert_eq!(config.common.log_format, LogFormat::Json);
    assert_eq!(
        config.common.token,
        Some(centroid_runtime::BearerToken::new("farm-token").unwrap())
    );
    assert_eq!(config.server.ready_file, Some("/tmp/ready".into()));
    assert_eq!(config.server.metrics_listen.as_deref(), Some("127.0.0.1:0"));
}
