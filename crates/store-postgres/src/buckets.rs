//! The rate-limit buckets every replica of the database shares ([`SharedBuckets`],
//! `mcp_tasks_core::buckets`): one row per bucket key (a limit and a requester), its
//! theoretical arrival time, updated by one function call (one round trip) under the
//! row's lock. Rows past their time are equivalent to a full bucket: each call deletes up
//! to 16 of them, so the table holds about the requesters active within a refill period.

use std::time::Duration;

use async_trait::async_trait;
use mcp_tasks_core::StoreError;
use mcp_tasks_core::buckets::{SharedBuckets, cell_ms};
use mcp_tasks_core::rate::Rate;

/// Schema version 9 -> 10: the shared rate-limit buckets.
pub(crate) const MIGRATION: &str = "
    CREATE TABLE rate_buckets (
        key    text PRIMARY KEY,
        -- Theoretical arrival time of the next admission, ms since the epoch.
        tat_ms double precision NOT NULL
    );
    CREATE INDEX rate_buckets_tat ON rate_buckets (tat_ms);
    -- Spend one from bucket p_key (emission interval and tolerance in ms) at p_now: 0
    -- when admitted, else the ms until one would be (nothing spent).
    CREATE FUNCTION rate_spend(p_key text, p_emission double precision,
                               p_tolerance double precision, p_now bigint)
        RETURNS double precision
        LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
    DECLARE
        tat double precision;
    BEGIN
        DELETE FROM rate_buckets WHERE key IN
            (SELECT key FROM rate_buckets WHERE tat_ms < p_now AND key <> p_key LIMIT 16);
        INSERT INTO rate_buckets (key, tat_ms) VALUES (p_key, p_now)
            ON CONFLICT (key) DO NOTHING;
        SELECT greatest(tat_ms, p_now) INTO tat FROM rate_buckets WHERE key = p_key FOR UPDATE;
        IF tat - p_now > p_tolerance THEN
            RETURN tat - p_now - p_tolerance;
        END IF;
        UPDATE rate_buckets SET tat_ms = tat + p_emission WHERE key = p_key;
        RETURN 0;
    END $$;
";

const SPEND: &str = "SELECT rate_spend($1, $2, $3, $4)";

/// The shared buckets of a [`crate::PgStore`], on its pool.
pub(crate) struct PgBuckets {
    pub(crate) db: crate::db::Db,
}

#[async_trait]
impl SharedBuckets for PgBuckets {
    async fn spend(
        &self,
        key: &str,
        rate: Rate,
        now_ms: i64,
    ) -> Result<Option<Duration>, StoreError> {
        let (emission, tolerance) = cell_ms(rate);
        let rows = self
            .db
            .query(SPEND, &[&key, &emission, &tolerance, &now_ms])
            .await?;
        let wait: f64 = rows.first().map_or(0.0, |r| r.get(0));
        Ok((wait > 0.0).then(|| Duration::from_secs_f64(wait / 1000.0)))
    }
}
