-- pet_clinic: a hand-written example database in the style of Spider (not Spider data).
-- Built by benchsmith's materialize_example("spider", dest) into database/pet_clinic/pet_clinic.sqlite.
PRAGMA foreign_keys = ON;

CREATE TABLE "Owners" (
  "owner_id" INTEGER PRIMARY KEY,
  "first_name" VARCHAR(40),
  "last_name" VARCHAR(40),
  "city" VARCHAR(40),
  "phone" VARCHAR(20)
);

CREATE TABLE "Pets" (
  "pet_id" INTEGER PRIMARY KEY,
  "owner_id" INTEGER NOT NULL,
  "pet_name" VARCHAR(40),
  "species" VARCHAR(20),
  "breed" VARCHAR(40),
  "birth_year" INTEGER,
  "weight_kg" REAL,
  FOREIGN KEY ("owner_id") REFERENCES "Owners" ("owner_id")
);

CREATE TABLE "Vets" (
  "vet_id" INTEGER PRIMARY KEY,
  "vet_name" VARCHAR(60),
  "specialty" VARCHAR(40)
);

CREATE TABLE "Visits" (
  "visit_id" INTEGER PRIMARY KEY,
  "pet_id" INTEGER NOT NULL,
  "vet_id" INTEGER NOT NULL,
  "visit_date" DATETIME,
  "reason" VARCHAR(80),
  "cost" DECIMAL(8, 2),
  FOREIGN KEY ("pet_id") REFERENCES "Pets" ("pet_id"),
  FOREIGN KEY ("vet_id") REFERENCES "Vets" ("vet_id")
);

INSERT INTO "Owners" VALUES (1, 'Hannah', 'Whitlock', 'Springfield', '555-0142');
INSERT INTO "Owners" VALUES (2, 'Omar', 'Haddad', 'Riverton', '555-0178');
INSERT INTO "Owners" VALUES (3, 'Grace', 'Lindholm', 'Springfield', NULL);
INSERT INTO "Owners" VALUES (4, 'Tomas', 'Varga', 'Lakeview', '555-0111');
INSERT INTO "Owners" VALUES (5, 'Priya', 'Shah', 'Riverton', '555-0190');
INSERT INTO "Owners" VALUES (6, 'Colin', 'McBride', 'Springfield', '555-0123');
INSERT INTO "Owners" VALUES (7, 'Ines', 'Carvalho', 'Lakeview', '555-0165');

INSERT INTO "Pets" VALUES (1, 1, 'Biscuit', 'dog', 'Beagle', 2016, 11.2);
INSERT INTO "Pets" VALUES (2, 1, 'Pepper', 'cat', 'Siamese', 2019, 4.1);
INSERT INTO "Pets" VALUES (3, 2, 'Rocket', 'dog', 'Border Collie', 2020, 17.8);
INSERT INTO "Pets" VALUES (4, 3, 'Mochi', 'cat', 'Domestic Shorthair', 2018, 5.3);
INSERT INTO "Pets" VALUES (5, 4, 'Kiwi', 'bird', 'Budgerigar', 2021, 0.04);
INSERT INTO "Pets" VALUES (6, 4, 'Bruno', 'dog', 'Boxer', 2015, 29.5);
INSERT INTO "Pets" VALUES (7, 4, 'Luna', 'cat', 'Maine Coon', 2017, 7.6);
INSERT INTO "Pets" VALUES (8, 5, 'Nutmeg', 'rabbit', 'Holland Lop', 2022, 1.7);
INSERT INTO "Pets" VALUES (9, 6, 'Ziggy', 'dog', 'Dachshund', 2019, 8.9);
INSERT INTO "Pets" VALUES (10, 7, 'Olive', 'cat', 'Ragdoll', 2020, 6.2);
INSERT INTO "Pets" VALUES (11, 7, 'Sunny', 'bird', 'Cockatiel', 2018, 0.09);

INSERT INTO "Vets" VALUES (1, 'Dr. Elena Brooks', 'general practice');
INSERT INTO "Vets" VALUES (2, 'Dr. Marcus Oyelaran', 'dentistry');
INSERT INTO "Vets" VALUES (3, 'Dr. Sofia Reyes', 'surgery');
INSERT INTO "Vets" VALUES (4, 'Dr. Wen Li', 'exotic animals');

INSERT INTO "Visits" VALUES (1, 1, 1, '2023-01-12 09:30:00', 'annual checkup', 65.00);
INSERT INTO "Visits" VALUES (2, 2, 2, '2023-02-03 14:00:00', 'tooth cleaning', 180.00);
INSERT INTO "Visits" VALUES (3, 3, 3, '2023-02-20 11:15:00', 'leg injury', 920.50);
INSERT INTO "Visits" VALUES (4, 6, 1, '2023-03-08 10:00:00', 'vaccination', 45.00);
INSERT INTO "Visits" VALUES (5, 5, 4, '2023-03-22 16:30:00', 'feather loss', 120.00);
INSERT INTO "Visits" VALUES (6, 7, 2, '2023-04-11 13:45:00', 'tooth extraction', 410.00);
INSERT INTO "Visits" VALUES (7, 9, 1, '2023-05-02 09:00:00', 'annual checkup', 65.00);
INSERT INTO "Visits" VALUES (8, 1, 3, '2023-06-15 08:30:00', 'lump removal', 640.00);
INSERT INTO "Visits" VALUES (9, 10, 1, '2023-07-19 15:20:00', 'vaccination', 45.00);
INSERT INTO "Visits" VALUES (10, 6, 2, '2023-08-30 10:40:00', 'tooth cleaning', 195.00);
INSERT INTO "Visits" VALUES (11, 11, 4, '2023-09-14 12:10:00', 'beak trim', 55.00);
INSERT INTO "Visits" VALUES (12, 3, 1, '2023-10-05 09:50:00', 'follow-up', 60.00);
