-- zk-recipes-fencing: the table a fenced write checks and records tokens in.
--
-- One row per (scope, resource): the highest fencing token the database has accepted for that
-- resource from the holders of one lock (the scope: the lock's path). A write whose token is
-- lower is refused. Apply it with your migration tool (sqlx, refinery, Flyway, psql -f), or
-- call Fence::migrate; Fence::open checks the table before the first write. Idempotent.
CREATE TABLE IF NOT EXISTS zk_recipes_fences (
    -- the lock (or leadership) path whose tokens are compared: tokens of different paths never mix
    scope      text        NOT NULL CHECK (octet_length(scope) BETWEEN 1 AND 1024),
    -- the resource the writes protect (a row key, a table name: the caller's choice)
    resource   text        NOT NULL CHECK (octet_length(resource) BETWEEN 1 AND 512),
    -- the highest token accepted (a ZooKeeper zxid)
    token      bigint      NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (scope, resource)
);
