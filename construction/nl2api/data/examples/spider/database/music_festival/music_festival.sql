-- music_festival: a hand-written example database in the style of Spider (not Spider data).
-- Built by benchsmith's materialize_example("spider", dest) into database/music_festival/music_festival.sqlite.
PRAGMA foreign_keys = ON;

CREATE TABLE "venue" (
  "Venue_ID" int,
  "Name" text,
  "City" text,
  "Capacity" int,
  "Opened_Year" int,
  PRIMARY KEY ("Venue_ID")
);

CREATE TABLE "performer" (
  "Performer_ID" int,
  "Name" text,
  "Country" text,
  "Genre" text,
  "Age" int,
  PRIMARY KEY ("Performer_ID")
);

CREATE TABLE "festival" (
  "Festival_ID" int,
  "Name" text,
  "Venue_ID" int,
  "Year" int,
  "Attendance" int,
  PRIMARY KEY ("Festival_ID"),
  FOREIGN KEY ("Venue_ID") REFERENCES "venue" ("Venue_ID")
);

CREATE TABLE "performance" (
  "Performer_ID" int,
  "Festival_ID" int,
  "Slot" int,
  "Is_Headliner" text,
  PRIMARY KEY ("Performer_ID", "Festival_ID"),
  FOREIGN KEY ("Performer_ID") REFERENCES "performer" ("Performer_ID"),
  FOREIGN KEY ("Festival_ID") REFERENCES "festival" ("Festival_ID")
);

INSERT INTO "venue" VALUES (1, 'Riverside Amphitheatre', 'Portland', 18000, 1994);
INSERT INTO "venue" VALUES (2, 'Harbour Lights Park', 'Halifax', 25000, 2003);
INSERT INTO "venue" VALUES (3, 'Old Mill Fields', 'Leeds', 32000, 1988);
INSERT INTO "venue" VALUES (4, 'Cedar Bowl', 'Austin', 12500, 2011);
INSERT INTO "venue" VALUES (5, 'Lakeshore Green', 'Toronto', 40000, 1999);
INSERT INTO "venue" VALUES (6, 'Saltmarsh Arena', 'Brighton', 9000, 2016);

INSERT INTO "performer" VALUES (1, 'The Lantern Keepers', 'Canada', 'Folk', 34);
INSERT INTO "performer" VALUES (2, 'Mira Calloway', 'United States', 'Pop', 27);
INSERT INTO "performer" VALUES (3, 'Northbound Static', 'United Kingdom', 'Rock', 41);
INSERT INTO "performer" VALUES (4, 'Juniper Hale', 'Canada', 'Pop', 23);
INSERT INTO "performer" VALUES (5, 'Copper Valley Band', 'United States', 'Country', 45);
INSERT INTO "performer" VALUES (6, 'Echo Parade', 'United Kingdom', 'Pop', 29);
INSERT INTO "performer" VALUES (7, 'Dmitri Sol', 'Canada', 'Electronic', 31);
INSERT INTO "performer" VALUES (8, 'Glass Orchard', 'United States', 'Rock', 38);
INSERT INTO "performer" VALUES (9, 'Ada Moreno', 'Spain', 'Jazz', 52);
INSERT INTO "performer" VALUES (10, 'Tidal Arcade', 'Canada', 'Rock', 26);
INSERT INTO "performer" VALUES (11, 'Bramble & Finch', 'United Kingdom', 'Folk', 36);
INSERT INTO "performer" VALUES (12, 'Kaito Rains', 'Japan', 'Electronic', 24);

INSERT INTO "festival" VALUES (1, 'Summer Lights', 2, 2021, 21500);
INSERT INTO "festival" VALUES (2, 'Riverside Sessions', 1, 2021, 15800);
INSERT INTO "festival" VALUES (3, 'Mill Stomp', 3, 2022, 30100);
INSERT INTO "festival" VALUES (4, 'Summer Lights', 2, 2022, 23900);
INSERT INTO "festival" VALUES (5, 'Lakeshore Live', 5, 2022, 37250);
INSERT INTO "festival" VALUES (6, 'Cedar Nights', 4, 2023, 11800);
INSERT INTO "festival" VALUES (7, 'Lakeshore Live', 5, 2023, 39400);
INSERT INTO "festival" VALUES (8, 'Mill Stomp', 3, 2023, 28750);
INSERT INTO "festival" VALUES (9, 'Summer Lights', 2, 2023, 24600);

INSERT INTO "performance" VALUES (1, 1, 3, 'F');
INSERT INTO "performance" VALUES (2, 1, 5, 'T');
INSERT INTO "performance" VALUES (4, 1, 2, 'F');
INSERT INTO "performance" VALUES (3, 2, 4, 'T');
INSERT INTO "performance" VALUES (8, 2, 2, 'F');
INSERT INTO "performance" VALUES (3, 3, 6, 'T');
INSERT INTO "performance" VALUES (11, 3, 1, 'F');
INSERT INTO "performance" VALUES (6, 3, 4, 'F');
INSERT INTO "performance" VALUES (2, 4, 4, 'F');
INSERT INTO "performance" VALUES (7, 4, 5, 'T');
INSERT INTO "performance" VALUES (5, 5, 6, 'T');
INSERT INTO "performance" VALUES (10, 5, 3, 'F');
INSERT INTO "performance" VALUES (4, 5, 2, 'F');
INSERT INTO "performance" VALUES (12, 6, 3, 'T');
INSERT INTO "performance" VALUES (1, 6, 1, 'F');
INSERT INTO "performance" VALUES (6, 7, 5, 'T');
INSERT INTO "performance" VALUES (8, 7, 4, 'F');
INSERT INTO "performance" VALUES (2, 7, 3, 'F');
INSERT INTO "performance" VALUES (3, 8, 5, 'F');
INSERT INTO "performance" VALUES (10, 8, 6, 'T');
INSERT INTO "performance" VALUES (4, 9, 5, 'T');
INSERT INTO "performance" VALUES (11, 9, 2, 'F');
