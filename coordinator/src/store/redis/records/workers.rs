//! The cards of live workers in Redis, published for the other coordinators.

use std::time::Duration;

use redis::AsyncCommands;

use super::super::RedisStore;
use super::super::codec::{from_json, to_json};
use crate::error::StoreResult;
use crate::model::WorkerCard;

impl RedisStore {
    pub(super) async fn put_worker_card(
        &self,
        card: &WorkerCard,
        ttl: Duration,
    ) -> StoreResult<()> {
        let mut pipe = redis::pipe();
        pipe.cmd("SET")
            .arg(self.key(&format!("worker:{}", card.worker_id)))
            .arg(to_json(card))
            .arg("PX")
            .arg(ttl.as_millis() as u64)
            .ignore();
        pipe.cmd("SADD")
            .arg(self.key("workers"))
            .arg(&card.worker_id)
            .ignore();
        pipe.query_async::<()>(&mut self.conn()).await?;
        Ok(())
    }

    pub(super) async fn worker_cards(&self) -> StoreResult<Vec<WorkerCard>> {
        let ids: Vec<String> = self.conn().smembers(self.key("workers")).await?;
        let mut cards = Vec::new();
        for id in ids {
            let key = self.key(&format!("worker:{id}"));
            let text: Option<String> = self.conn().get(&key).await?;
            match text {
                Some(text) => cards.push(from_json::<WorkerCard>(&key, &text)?),
                None => {
                    let _: () = self.conn().srem(self.key("workers"), &id).await?;
                }
            }
        }
        cards.sort_by(|left, right| left.worker_id.cmp(&right.worker_id));
        Ok(cards)
    }
}
