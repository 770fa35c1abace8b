-- Build numbers come from a counter on the pipeline, taken with one UPDATE … RETURNING in the
-- transaction that inserts the build: concurrent runs of one pipeline are numbered one after
-- the other (MAX(number) + 1 let two of them read the same maximum and one fail on
-- UNIQUE (pipeline_id, number)). Existing pipelines continue after their highest number.
ALTER TABLE pipelines ADD COLUMN last_build_number BIGINT NOT NULL DEFAULT 0;
UPDATE pipelines SET last_build_number = COALESCE((SELECT MAX(number) FROM builds WHERE builds.pipeline_id = pipelines.id), 0);
