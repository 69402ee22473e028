//! Bad input and a missing schema: typed errors, nothing written.

use zk_recipes::InterProcessMutex;
use zk_recipes_fencing::{Fence, FenceError, FencingToken, MAX_RESOURCE_BYTES};
use zk_recipes_testing::fixtures::{framework, shared_server, unique};

use super::{connect, connect_to, counter, counter_table, highest, pg, table};

#[tokio::test]
async fn resource_keys_the_table_cannot_store_are_refused_and_nothing_is_written() {
    let (cs, name) = (shared_server().await, table("input"));
    let mut db = connect().await;
    counter_table(&db, &name).await;
    let fence = Fence::open(&db).await.unwrap();
    let fw = framework(&cs).await;
    let guard = InterProcessMutex::new(&fw, &format!("/{}", unique("fenced-input"))).unwrap().acquire().await.unwrap();
    let token = FencingToken::of(&guard);
    let sql = format!("UPDATE {name} SET n = n + 1 WHERE key = 'k'");
    let longest = "k".repeat(MAX_RESOURCE_BYTES);
    for bad in ["".to_string(), format!("{longest}k"), "a\0b".to_string()] {
        match fence.execute(&mut db, &token, &bad, &sql, &[]).await {
            Err(FenceError::InvalidKey { what: "resource key", .. }) => {}
            other => panic!("{} bytes: not refused as an invalid key: {other:?}", bad.len()),
        }
    }
    assert_eq!(counter(&db, &name).await.0, 0, "nothing written");
    fence.execute(&mut db, &token, &longest, &sql, &[]).await.unwrap();
    assert_eq!(highest(&db, token.scope(), &longest).await, Some(token.value()), "the longest key is stored");
}

#[tokio::test]
async fn a_missing_or_misshapen_fence_table_is_a_clear_error() {
    let pg = pg().await;
    let admin = connect().await;
    let (missing, wrong) = (table("nofence"), table("badfence"));
    for db in [&missing, &wrong] {
        admin.batch_execute(&format!("CREATE DATABASE {db}")).await.unwrap();
    }

    let db = connect_to(&pg.connection_string_for(&missing)).await;
    let error = Fence::open(&db).await.unwrap_err();
    assert!(matches!(error, FenceError::SchemaMissing { table: "zk_recipes_fences" }), "{error:?}");
    assert!(error.to_string().contains("migrations/0001_fences.sql"), "the error says what to do: {error}");
    Fence::migrate(&db).await.unwrap();
    Fence::migrate(&db).await.expect("the migration is idempotent");
    Fence::open(&db).await.unwrap();

    let db = connect_to(&pg.connection_string_for(&wrong)).await;
    db.batch_execute("CREATE TABLE zk_recipes_fences (scope text, resource text, token integer)").await.unwrap();
    let error = Fence::open(&db).await.unwrap_err();
    assert!(matches!(error, FenceError::SchemaMismatch { .. }), "a 32-bit token column: {error:?}");
    db.batch_execute("ALTER TABLE zk_recipes_fences ALTER COLUMN token TYPE bigint").await.unwrap();
    let error = Fence::open(&db).await.unwrap_err();
    assert!(matches!(error, FenceError::SchemaMismatch { .. }), "no key on (scope, resource): {error:?}");
    drop(db);
}

/// A resource written under two locks has a highest token per lock: a low token of one lock
/// is not refused because of a high token of the other.
#[tokio::test]
async fn tokens_of_different_lock_paths_never_mix() {
    let (cs, name) = (shared_server().await, table("scopes"));
    let mut db = connect().await;
    counter_table(&db, &name).await;
    let fence = Fence::open(&db).await.unwrap();
    let fw = framework(&cs).await;
    let (first, second) = (format!("/{}", unique("fenced-a")), format!("/{}", unique("fenced-b")));
    let low = InterProcessMutex::new(&fw, &first).unwrap().acquire().await.unwrap();
    let high = InterProcessMutex::new(&fw, &second).unwrap().acquire().await.unwrap();
    let (low, high) = (FencingToken::of(&low), FencingToken::of(&high));
    assert!(low.value() < high.value());
    let sql = format!("UPDATE {name} SET n = n + 1 WHERE key = 'k'");
    fence.execute(&mut db, &high, "k", &sql, &[]).await.unwrap();
    fence.execute(&mut db, &low, "k", &sql, &[]).await.expect("another lock's tokens do not fence this one");
    assert_eq!(counter(&db, &name).await.0, 2);
    // within one scope the lower is refused
    let older = FencingToken::new(second.as_str(), low.value()).unwrap();
    assert!(fence.execute(&mut db, &older, "k", &sql, &[]).await.unwrap_err().is_stale());
    assert_eq!(counter(&db, &name).await.0, 2);
}
