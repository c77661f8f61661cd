-- up
CREATE TABLE shipments (
    id bigserial PRIMARY KEY,
    order_id bigint NOT NULL REFERENCES orders (id),
    carrier text NOT NULL,
    tracking_number text,
    country char(2) NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX shipments_order_id_idx ON shipments (order_id);

-- down
DROP TABLE shipments;
