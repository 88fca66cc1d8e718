//! The registry's choices: registration never takes over a live worker (another
//! instance at the same or another address); dead workers are forgotten after the
//! grace; a saturated worker gets no call until a heartbeat reports a free slot; a
//! waiting-room place only for a caller allowed one, after every free slot.

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
        instance_id: format!("{address}#1"),
        prefetch: 0,
    }
}

#[tokio::test]
async fn a_registration_never_takes_over_a_live_worker() {
    let registry = Registry::new(
        Duration::from_millis(300),
        Duration::from_secs(60),
        None,
        None,
    );
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
    let registry = Registry::new(Duration::from_secs(10), Duration::from_secs(60), None, None);
    registry.register(info("w1", "http://127.0.0.1:1")).unwrap();
    let skills = vec!["debug.noop".to_string()];
    let none = BTreeSet::new();
    assert!(registry.try_acquire(&skills, &none).is_some());
    registry.mark_saturated("w1");
    assert!(
        registry.try_acquire(&skills, &none).is_none(),
        "refused for capacity: wait"
    );
    assert!(registry.heartbeat("w1", "http://127.0.0.1:1#1", 0, false));
    assert!(
        registry.try_acquire(&skills, &none).is_none(),
        "a heartbeat without a free slot (a KLayout process being replaced) does not"
    );
    assert!(registry.heartbeat("w1", "http://127.0.0.1:1#1", 2, false));
    assert!(
        registry.try_acquire(&skills, &none).is_some(),
        "a heartbeat with a free slot frees it"
    );
}

fn instance(worker_id: &str, address: &str, instance_id: &str) -> WorkerInfo {
    WorkerInfo {
        instance_id: instance_id.into(),
        slots: 7,
        skills: vec!["other.skill".into()],
        ..info(worker_id, address)
    }
}

#[tokio::test]
async fn another_instance_at_the_same_address_cannot_overwrite_a_live_worker() {
    let registry = Registry::new(
        Duration::from_millis(300),
        Duration::from_secs(60),
        None,
        None,
    );
    let address = "http://127.0.0.1:1";
    assert_eq!(
        registry.register(instance("w1", address, "first")),
        Ok(true)
    );
    let taken = registry
        .register(instance("w1", address, "impostor"))
        .unwrap_err();
    assert_eq!(taken.live_address, address);
    let listed = registry.statuses()[0].info.clone().unwrap();
    assert_eq!(listed.instance_id, "first");
    assert_eq!(listed.skills, ["other.skill"], "slots and skills unchanged");
    assert!(
        !registry.heartbeat("w1", "impostor", 0, true),
        "another instance's heartbeat is not known"
    );
    assert!(
        !registry.deregister("w1", "impostor", "bye"),
        "nor is its deregistration"
    );
    assert!(registry.is_alive("w1"));
    // the same instance re-registering refreshes what it advertises, in place
    let refreshed = WorkerInfo {
        slots: 3,
        ..instance("w1", address, "first")
    };
    assert_eq!(registry.register(refreshed), Ok(false));
    assert_eq!(registry.statuses()[0].info.as_ref().unwrap().slots, 3);
    assert!(registry.heartbeat("w1", "first", 3, false));
    // once the live one is dead, another instance takes the id
    assert!(registry.deregister("w1", "first", "stopping"));
    assert_eq!(
        registry.register(instance("w1", address, "second")),
        Ok(true)
    );
    assert_eq!(
        registry.statuses()[0].info.as_ref().unwrap().instance_id,
        "second"
    );
}

#[tokio::test]
async fn dead_workers_are_forgotten_after_the_grace_and_live_ones_kept() {
    let registry = Registry::new(
        Duration::from_millis(100),
        Duration::from_millis(300),
        None,
        None,
    );
    registry
        .register(info("silent", "http://127.0.0.1:1"))
        .unwrap();
    registry
        .register(info("beating", "http://127.0.0.1:2"))
        .unwrap();
    let started = Instant::now();
    let mut declared_dead = Vec::new();
    while started.elapsed() < Duration::from_millis(700) {
        assert!(registry.heartbeat("beating", "http://127.0.0.1:2#1", 2, false));
        declared_dead.extend(registry.sweep());
        if started.elapsed() < Duration::from_millis(300) {
            assert!(
                registry.known_ids().contains(&"silent".to_string())
                    || declared_dead.contains(&"silent".to_string()),
            );
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(declared_dead, ["silent"]);
    let listed: Vec<String> = registry
        .statuses()
        .iter()
        .map(|status| status.info.as_ref().unwrap().worker_id.clone())
        .collect();
    assert_eq!(
        listed,
        ["beating"],
        "the dead one is pruned, the live one kept"
    );
    // it may come back by registering again
    assert_eq!(
        registry.register(info("silent", "http://127.0.0.1:1")),
        Ok(true)
    );
    assert!(registry.is_alive("silent"));
}

#[tokio::test]
async fn a_waiting_room_place_is_taken_only_when_allowed_and_no_worker_has_a_free_slot() {
    let registry = Registry::new(Duration::from_secs(10), Duration::from_secs(60), None, None);
    let one_slot = |worker_id: &str, address: &str, prefetch: u32| WorkerInfo {
        slots: 1,
        prefetch,
        ..info(worker_id, address)
    };
    registry
        .register(one_slot("prefetching", "http://127.0.0.1:1", 1))
        .unwrap();
    let skills = vec!["debug.noop".to_string()];
    let none = BTreeSet::new();
    let acquire = |may_wait: bool| registry.try_acquire_where(&skills, &none, may_wait, |_| true);
    let running = acquire(false).expect("its slot");
    assert!(acquire(false).is_none(), "no free slot, no waiting allowed");
    assert_eq!(
        registry.free_places(),
        FreePlaces {
            slots: 0,
            waiting: 1
        }
    );
    // a worker with a free slot comes before a waiting place
    registry
        .register(one_slot("free", "http://127.0.0.1:2", 0))
        .unwrap();
    let on_free = acquire(true).expect("a slot");
    assert_eq!(on_free.worker_id, "free");
    let waiting = acquire(true).expect("the waiting place");
    assert_eq!(waiting.worker_id, "prefetching");
    assert!(acquire(true).is_none(), "slots + prefetch taken");
    drop((running, on_free, waiting));
    assert_eq!(
        registry.free_places(),
        FreePlaces {
            slots: 2,
            waiting: 1
        }
    );
}
