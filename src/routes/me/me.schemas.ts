import { z } from "@hono/zod-openapi";
import { pathId } from "../../lib/ids";

export const MyPhoneSchema = z
  .object({
    id: z.number().int().openapi({ example: 1 }),
    country_code: z.string().openapi({ description: "Calling code, digits", example: "1" }),
    phone_number: z.string().openapi({ description: "National number, digits", example: "4155550199" }),
    phone_full: z.string().openapi({ description: "E.164", example: "+14155550199" }),
    primary: z.boolean().openapi({ example: true }),
    confirmed: z.boolean().openapi({
      description:
        "Whether you confirmed the number as yours. Only a confirmed phone (and your secure number) makes calls " +
        "from it trusted by the people who trust you; a phone your employer entered or changed is not confirmed.",
      example: true,
    }),
  })
  .openapi("MyPhone");

export const MyPhoneParams = z.object({ id: pathId("id", "Phone id (from GET /me/phones)") });
