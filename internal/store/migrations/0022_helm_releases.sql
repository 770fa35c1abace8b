-- Helm releases (docs/runtimes.md, "Helm releases"): what a runtime reads of Helm's release
-- storage in its clusters (runtimev1.HelmReleaseChanged), one row per runtime, cluster,
-- namespace and release, replaced by each report and deleted when the release is uninstalled
-- (HelmReleaseDeleted). detail is the reported record (runtimev1.HelmReleaseRecord, history
-- included) as JSON. Times are unix microseconds.
CREATE TABLE helm_releases (
    id            TEXT PRIMARY KEY,
    account_id    TEXT NOT NULL,
    runtime_id    TEXT NOT NULL,
    cluster       TEXT NOT NULL,
    namespace     TEXT NOT NULL,
    name          TEXT NOT NULL,
    chart         TEXT NOT NULL,
    chart_version TEXT NOT NULL,
    app_version   TEXT NOT NULL,
    status        TEXT NOT NULL,
    revision      INTEGER NOT NULL,
    updated_at    BIGINT NOT NULL,
    reported_at   BIGINT NOT NULL,
    detail        TEXT NOT NULL,
    UNIQUE (runtime_id, cluster, namespace, name),
    FOREIGN KEY (account_id, runtime_id) REFERENCES runtimes (account_id, id) ON DELETE CASCADE
);
CREATE INDEX helm_releases_account ON helm_releases (account_id, cluster, namespace, name);
