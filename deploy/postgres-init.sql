-- Run on the first start of docker-compose's Postgres: the database cadre's workers record finished
-- runs in (CADRE_DATABASE_URL). The workers create its tables themselves.
CREATE DATABASE cadre;
