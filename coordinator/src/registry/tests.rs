//! The registry's choices: registration never takes over a live worker; a
//! saturated worker gets no call until a heartbeat reports a free slot.

use super::*;

fn info(worker_id: &str, address: &str) -> WorkerInfo {
    WorkerInfo {
        worker_id: worker_id.into(),
        address: address.into(),
        slots: 2,
        skills: vec!["debug.noop".into()],
        klayout_version: "test".into(),
        protocol_version: centroid_proto::PROTOCOL_VERSION,
        hostname: "localhost".into(),
    }
}

#[tokio::test]
async fn a_registration_never_takes_over_a_live_worker() {
    let registry = Registry::new(Duration::from_millis(300), None, None);
    assert_eq!(
        registry.register(info("w1", "http://127.0.0.1:1")),
        Ok(true)
    );
    assert_eq!(
        registry.register(info("w1", "http://127.0.0.1:1")),
        Ok(false),
        "the same worker again keeps its entry"
    );
    let taken = registry
        .register(info("w1", "http://127.0.0.1:2"))
        .unwrap_err();
    assert_eq!(taken.live_address, "http://127.0.0.1:1");
    assert!(
        registry.statuses()[0]
            .info
            .as_ref()
            .unwrap()
            .address
            .ends_with(":1")
    );
    // once the live one stops heartbeating, the id is free again
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(
        registry.register(info("w1", "http://127.0.0.1:2")),
        Ok(true)
    );
    assert!(
        registry.statuses()[0]
            .info
            .as_ref()
            .unwrap()
            .address
            .ends_with(":2")
    );
}

#[tokio::test]
async fn a_saturated_worker_gets_no_call_until_a_heartbeat_reports_a_free_slot() {
    let registry = Registry::new(Duration::from_secs(10), None, None);
    registry.register(info("w1", "http://127.0.0.1:1")).unwrap();
    let skills = vec!["debug.noop".to_string()];
    let none = BTreeSet::new();
    assert!(registry.try_acquire(&skills, &none).is_some());
    registry.mark_saturated("w1");
    assert!(
        registry.try_acquire(&skills, &none).is_none(),
        "refused for capacity: wait"
    );
    assert!(registry.heartbeat("w1", 0, false));
    assert!(
        registry.try_acquire(&skills, &none).is_none(),
        "a heartbeat without a free slot (a KLayout process being replaced) does not"
    );
    assert!(registry.heartbeat("w1", 2, false));
    assert!(
        registry.try_acquire(&skills, &none).is_some(),
        "a heartbeat with a free slot frees it"
    );
}
